import { posix } from 'node:path';
import type { Host } from './host.ts';
import { parseMountinfo, type MountEntry } from './mountinfo.ts';
import { parseProcStat } from './process-group.ts';

// What the node's processes hold, read from the host's /proc through the Host port: the mount
// table of every mount namespace (one mountinfo per namespace, not per process), the processes
// with a block device open, and who a process is (its pod, from its cgroup). Every runbook that
// must know whether a device is in use asks here. Processes come and go while we read: a
// vanished pid is skipped, never an error.

/** A process with a device open. */
export interface Opener {
  pid: number;
  comm: string;
  /** /proc/<pid>/stat state: D = uninterruptible sleep (stuck on the map's queued I/O). */
  state: string;
  /** How many of its file descriptors point at the map (or one of its disks). */
  fds: number;
  /** /proc/<pid>/stat start time (clock ticks since boot): with the pid, who it is across a pid's reuse. */
  startTime: string | null;
  /** First line of /proc/<pid>/cgroup, null when unreadable. */
  cgroup: string | null;
  /** The pod the process belongs to, from a pod UID in its cgroup path. */
  podUid: string | null;
  /** One of our own read probes (this job's, or one an earlier job left stuck: kept in the agent's observations). */
  ownProbe: boolean;
}

/** `kubepods-burstable-pod1f0c..._2b.slice` or `/kubepods/burstable/pod1f0c...-2b/`: the pod UID. */
const POD_UID = /kubepods[^\n]*?[/-]pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/;

/** The pod a process belongs to, from /proc/<pid>/cgroup (cgroupfs `pod<uid>` or systemd `pod<uid_with_underscores>.slice`). */
export function podUidOfCgroup(cgroup: string | null): string | null {
  const m = cgroup === null ? null : POD_UID.exec(cgroup);
  return m?.[1] ? m[1].replace(/_/g, '-') : null;
}

const isPid = (name: string): boolean => /^[0-9]+$/.test(name);

interface NamespaceMounts {
  /** `mnt:[4026531840]`, or `pid:<n>` when the namespace link could not be read. */
  namespace: string;
  pids: number[];
  mounts: MountEntry[];
}

export interface MountScan {
  namespaces: NamespaceMounts[];
  /** Pids whose mountinfo we could not read (gone, or not permitted). */
  unreadable: number[];
}

export async function scanMountNamespaces(host: Host): Promise<MountScan> {
  const byNs = new Map<string, NamespaceMounts>();
  const unreadable: number[] = [];
  for (const name of await host.list('/proc')) {
    if (!isPid(name)) continue;
    const pid = Number(name);
    const ns = (await host.readlink(`/proc/${name}/ns/mnt`).catch(() => null)) ?? `pid:${pid}`;
    const seen = byNs.get(ns);
    if (seen) {
      seen.pids.push(pid);
      continue;
    }
    const text = await host.readFile(`/proc/${name}/mountinfo`).catch(() => null);
    // Kernel threads have an empty mountinfo of their own; they share init's namespace anyway.
    if (text === null) {
      unreadable.push(pid);
      continue;
    }
    byNs.set(ns, { namespace: ns, pids: [pid], mounts: parseMountinfo(text) });
  }
  return { namespaces: [...byNs.values()], unreadable };
}

/** Processes with at least one fd on one of `devicePaths` (as /proc/<pid>/fd links show them). */
export async function findOpeners(host: Host, devicePaths: ReadonlySet<string>): Promise<Map<string, Opener[]>> {
  const found = new Map<string, Opener[]>();
  if (devicePaths.size === 0) return found;
  for (const name of await host.list('/proc')) {
    if (!isPid(name)) continue;
    const counts = new Map<string, number>();
    for (const fd of await host.list(`/proc/${name}/fd`).catch(() => [] as string[])) {
      const target = await host.readlink(posix.join('/proc', name, 'fd', fd)).catch(() => null);
      if (target !== null && devicePaths.has(target)) counts.set(target, (counts.get(target) ?? 0) + 1);
    }
    if (counts.size === 0) continue;
    const who = await processFacts(host, Number(name));
    for (const [path, fds] of counts) {
      const list = found.get(path) ?? [];
      list.push({ ...who, fds });
      found.set(path, list);
    }
  }
  return found;
}

/** Devices named in /proc/swaps (first column). */
export function parseSwaps(text: string): string[] {
  return text
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

/** Who a process is: name, state, start time, and the cgroup (a pod's, when its path names a pod UID). */
export async function processFacts(host: Host, pid: number): Promise<Omit<Opener, 'fds'>> {
  const statText = await host.readFile(`/proc/${pid}/stat`).catch(() => null);
  const stat = statText === null ? null : parseProcStat(statText);
  const comm = statText === null ? '?' : statText.slice(statText.indexOf('(') + 1, statText.lastIndexOf(')'));
  const cgroupText = await host.readFile(`/proc/${pid}/cgroup`).catch(() => null);
  const cgroup =
    cgroupText
      ?.split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? null;
  return {
    pid,
    comm,
    state: stat?.state ?? '?',
    startTime: stat?.startTime ?? null,
    cgroup,
    podUid: podUidOfCgroup(cgroup),
    ownProbe: false,
  };
}
