// Parses /proc/<pid>/mountinfo (proc(5)):
//   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//   id parent major:minor root mount-point options [optional fields...] - fstype source super-options
// Paths escape space, tab, newline and backslash as octal (\040).

export interface MountEntry {
  majorMinor: string;
  /** The mounted subtree of the file system: `/dm-3` for a bind mount of the device node /dev/dm-3. */
  root: string;
  mountPoint: string;
  fsType: string;
  source: string;
}

const unescapeOctal = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const f = line.split(' ');
    const sep = f.indexOf('-', 6);
    const majorMinor = f[2];
    if (sep < 0 || !majorMinor || !/^\d+:\d+$/.test(majorMinor)) continue;
    out.push({
      majorMinor,
      root: unescapeOctal(f[3] ?? ''),
      mountPoint: unescapeOctal(f[4] ?? ''),
      fsType: f[sep + 1] ?? '',
      source: unescapeOctal(f[sep + 2] ?? ''),
    });
  }
  return out;
}

/**
 * Does this mount use the block device? Either the file system is on it (same major:minor), or
 * its device node is bind-mounted (kubelet does that for block-mode volumes: a devtmpfs mount
 * whose root is `/dm-3`), or the source names it.
 */
export function mountUses(m: MountEntry, dev: { majorMinor: string; names: readonly string[] }): boolean {
  if (dev.majorMinor !== '' && m.majorMinor === dev.majorMinor) return true;
  const nodes = dev.names.flatMap((n) => [`/dev/${n}`, `/${n}`]);
  if (m.fsType === 'devtmpfs' && nodes.includes(m.root)) return true;
  return nodes.includes(m.source);
}
