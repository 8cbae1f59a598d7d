import { posix } from 'node:path';
import type { Host } from './host.ts';

// realpath(3) in host-path space, through the Host port (lstat/readlink), so it works under
// HOST_ROOT and on the fake hosts: every component is resolved, parents included, so a directory
// swapped for a symlink anywhere along the way shows up in the answer. Components that do not
// exist (yet) are kept as written: nothing that does not exist can redirect. Too many links
// (a loop) is an error.

const MAX_LINKS = 40;

export class SymlinkLoopError extends Error {
  override name = 'SymlinkLoopError';
}

export async function realHostPath(host: Host, path: string): Promise<string> {
  let pending = posix.normalize(path).split('/').filter(Boolean);
  let resolved = '/';
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      resolved = posix.dirname(resolved);
      continue;
    }
    const next = posix.join(resolved, part);
    const info = await host.lstat(next);
    if (info?.type !== 'symlink') {
      resolved = next;
      if (info === null) return posix.join(resolved, ...pending); // the rest does not exist either
      continue;
    }
    if (++links > MAX_LINKS) throw new SymlinkLoopError(`too many symbolic links resolving ${path}`);
    const target = await host.readlink(next);
    if (target === null) return posix.join(next, ...pending);
    if (target.startsWith('/')) resolved = '/';
    pending = [...target.split('/').filter(Boolean), ...pending];
  }
  return resolved;
}
