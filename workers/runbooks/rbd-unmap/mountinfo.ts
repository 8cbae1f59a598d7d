// /proc/<pid>/task/<tid>/mountinfo (proc(5)):
// `36 35 252:0 / /var/lib/kubelet/pods/<uid>/volumes/.../mount rw,relatime shared:1 - ext4 /dev/rbd0 rw`
// Fields before ` - ` are fixed plus optional tags; paths escape space, tab, newline and `\` as
// octal (`\040`).

export interface MountEntry {
  id: number;
  parent: number;
  /** `major:minor` of the mounted device. */
  majorMinor: string;
  root: string;
  mountPoint: string;
  fsType: string;
  source: string;
}

const unescapeOctal = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const head = line.slice(0, sep).split(' ');
    const tail = line.slice(sep + 3).split(' ');
    if (head.length < 6 || tail.length < 2) continue;
    out.push({
      id: Number(head[0]),
      parent: Number(head[1]),
      majorMinor: head[2]!,
      root: unescapeOctal(head[3]!),
      mountPoint: unescapeOctal(head[4]!),
      fsType: tail[0]!,
      source: unescapeOctal(tail[1]!),
    });
  }
  return out;
}

/** The pod a process belongs to, from /proc/<pid>/cgroup (cgroupfs `pod<uid>` or systemd `pod<uid_with_underscores>.slice`). */
export function podUidOfCgroup(text: string): string | null {
  const m = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/.exec(text);
  return m?.[1] ? m[1].replace(/_/g, '-') : null;
}
