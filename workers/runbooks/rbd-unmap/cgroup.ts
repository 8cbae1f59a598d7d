/** The pod a process belongs to, from /proc/<pid>/cgroup (cgroupfs `pod<uid>` or systemd `pod<uid_with_underscores>.slice`). */
export function podUidOfCgroup(text: string): string | null {
  const m = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/.exec(text);
  return m?.[1] ? m[1].replace(/_/g, '-') : null;
}
