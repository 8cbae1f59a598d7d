import { posix } from 'node:path';
import type { FileInfo, Host } from './host.ts';

// Resolves a symlink chain in host-path space: `/dev/disk/by-id/x -> ../../sdb` means the host's
// /dev/sdb, which the agent must look up under its root, not in its own /dev.

export interface Resolved {
  /** The host path at the end of the chain. */
  path: string;
  /** What is there; null when the chain dangles. */
  info: FileInfo | null;
}

const MAX_HOPS = 8;

export async function followLink(host: Host, path: string): Promise<Resolved> {
  let current = path;
  for (let hop = 0; hop <= MAX_HOPS; hop++) {
    const info = await host.lstat(current);
    if (info?.type !== 'symlink') return { path: current, info };
    const target = await host.readlink(current);
    if (target === null) return { path: current, info: null };
    current = posix.resolve(posix.dirname(current), target);
  }
  return { path: current, info: null };
}
