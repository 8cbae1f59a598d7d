import { posix } from 'node:path';

// The pod directory as `find -P <dir> -xdev -printf '%y\t%D\t%s\t%P\0'` lists it in the host's mount
// namespace: one NUL-terminated record per entry, `<type letter>\t<st_dev>\t<size>\t<path
// relative to dir>` (the directory itself has the empty path). NUL ends a record because it is
// the one byte a path cannot hold; a tab can, so the path is everything after the third tab.
// Anything else (a record without its four fields, a type letter find does not print, a path
// that climbs out, output cut off before its last NUL) rejects the whole listing: a tree we
// cannot read completely is a tree we do not remove.

type TreeEntryType = 'file' | 'dir' | 'symlink' | 'block' | 'char' | 'fifo' | 'socket' | 'door';

export interface TreeEntry {
  type: TreeEntryType;
  /** st_dev in decimal, as find's %D prints it. */
  dev: string;
  size: number;
  /** Relative to the pod directory; '' is the directory itself. */
  rel: string;
}

const TYPES: Readonly<Record<string, TreeEntryType>> = { f: 'file', d: 'dir', l: 'symlink', b: 'block', c: 'char', p: 'fifo', s: 'socket', D: 'door' };

const TREE_FORMAT = '%y\\t%D\\t%s\\t%P\\0';

/** argv of the listing (find's own escapes in the format: it prints real tabs and NULs). */
export const treeArgv = (dir: string): string[] => ['find', '-P', dir, '-xdev', '-printf', TREE_FORMAT];

export type TreeParse = { ok: true; entries: TreeEntry[] } | { ok: false; problem: string };

function badPath(rel: string): boolean {
  if (rel === '') return false;
  if (rel.startsWith('/') || rel.endsWith('/')) return true;
  return rel.split('/').some((c) => c === '' || c === '.' || c === '..') || posix.normalize(rel) !== rel;
}

export function parsePodTree(stdout: string): TreeParse {
  if (stdout === '') return { ok: false, problem: 'the listing is empty (not even the directory itself)' };
  if (!stdout.endsWith('\0')) return { ok: false, problem: 'the listing does not end with a NUL: cut off or not find -printf output' };
  const entries: TreeEntry[] = [];
  const records = stdout.slice(0, -1).split('\0');
  for (const [i, record] of records.entries()) {
    const parts = record.split('\t');
    if (parts.length < 4) return { ok: false, problem: `record ${i + 1} has ${parts.length} field(s), not 4: ${JSON.stringify(record.slice(0, 80))}` };
    const [letter = '', dev = '', size = ''] = parts;
    const rel = parts.slice(3).join('\t');
    const type = TYPES[letter];
    if (!type) return { ok: false, problem: `record ${i + 1} has the unknown type letter ${JSON.stringify(letter)}` };
    if (!/^[0-9]{1,20}$/.test(dev) || !/^[0-9]{1,20}$/.test(size)) return { ok: false, problem: `record ${i + 1} has no numeric st_dev and size` };
    if (badPath(rel)) return { ok: false, problem: `record ${i + 1} has the path ${JSON.stringify(rel)}, not one under the directory` };
    entries.push({ type, dev, size: Number(size), rel });
  }
  const root = entries.filter((e) => e.rel === '');
  if (root.length !== 1 || root[0]?.type !== 'dir') return { ok: false, problem: 'the listing does not start from one directory' };
  return { ok: true, entries };
}

/** `major:minor` of a decimal st_dev (the kernel's new_encode_dev), to compare with mountinfo. */
export function majorMinorOfDev(dev: string): string {
  const n = BigInt(dev);
  const major = ((n >> 8n) & 0xfffn) | ((n >> 32n) & ~0xfffn);
  const minor = (n & 0xffn) | ((n >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}
