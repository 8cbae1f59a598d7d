// Parses /proc/<pid>/mountinfo (proc(5)), for every runbook that asks who uses a device:
//   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//   id parent major:minor root mount-point options [optional fields...] - fstype source super-options
// The optional fields end at the first lone `-` after the sixth field. Paths escape space, tab,
// newline and backslash as octal (`\040`), so a field never holds a space. A line that does not
// have this shape is skipped, never guessed at.
// Two option lists, because they disagree on purpose: the mount's own (`ro` when it was mounted or
// bind-mounted read-only) and the file system's (`ro` when the kernel turned the whole file system
// read-only, e.g. ext4's errors=remount-ro on older kernels; newer ones keep `rw` and add
// `emergency_ro`: test/fixtures/host/ext4-error-remount-ro/).

export interface MountEntry {
  id: number;
  parent: number;
  /** `major:minor` of the mounted device. */
  majorMinor: string;
  /** The mounted subtree of the file system: `/dm-3` for a bind mount of the device node /dev/dm-3. */
  root: string;
  mountPoint: string;
  fsType: string;
  source: string;
  /** The mount's own options (`rw`/`ro`, `nosuid`, `relatime`, ...). */
  mountOptions: readonly string[];
  /** The file system's (super block's) options, as the kernel shows them for this mount. */
  superOptions: readonly string[];
}

const unescapeOctal = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    const sep = f.indexOf('-', 6);
    const majorMinor = f[2];
    if (sep < 0 || f.length < sep + 3 || !majorMinor || !/^\d+:\d+$/.test(majorMinor)) continue;
    out.push({
      id: Number(f[0]),
      parent: Number(f[1]),
      majorMinor,
      root: unescapeOctal(f[3] ?? ''),
      mountPoint: unescapeOctal(f[4] ?? ''),
      fsType: f[sep + 1] ?? '',
      source: unescapeOctal(f[sep + 2] ?? ''),
      mountOptions: (f[5] ?? '').split(','),
      superOptions: (f[sep + 3] ?? '').split(',').filter((o) => o !== ''),
    });
  }
  return out;
}
