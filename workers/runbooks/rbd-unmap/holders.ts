import type { Host } from '../../host/host.ts';
import { devPath } from '../../host/paths.ts';
import { parseMountinfo } from '../../host/mountinfo.ts';
import { podUidOfCgroup } from '../../host/proc-facts.ts';

// Who holds /dev/rbdN: its mounts in every mount namespace (a grep of rbdN through
// /proc/*/task/*/mountinfo, one read per namespace), processes with the device open
// (/proc/*/fd), and kernel holders (/sys/block/rbdN/holders: dm, md). Paths are host paths: the
// agent needs hostPID and the host's /proc under its root.

export interface MountHolder {
  /** `mnt:[4026531840]`, or `pid:<n>` when the namespace link cannot be read. */
  namespace: string;
  /** The host's own mount namespace (pid 1's). */
  host: boolean;
  /** Processes in that namespace (up to 20). */
  pids: number[];
  /** Pods of those processes, from their cgroups. */
  podUids: string[];
  mountPoint: string;
  root: string;
  fsType: string;
  source: string;
}

export interface Opener {
  pid: number;
  fd: string;
  podUid: string | null;
}

export interface Holders {
  hostNamespace: string | null;
  mounts: MountHolder[];
  openers: Opener[];
  /** /sys/block/rbdN/holders entries. */
  kernel: string[];
}

const PIDS_KEPT = 20;
const isPid = (s: string): boolean => /^[0-9]+$/.test(s);

export async function scanHolders(host: Host, device: string, majorMinor: string | null): Promise<Holders> {
  const dev = devPath(device, 'rbd');
  const hostNamespace = await host.readlink('/proc/1/ns/mnt');
  const namespaces = new Map<string, { pids: number[]; sample: string }>();
  const openers: Opener[] = [];
  const podOf = new Map<number, string | null>();
  const podUid = async (pid: number): Promise<string | null> => {
    if (!podOf.has(pid)) podOf.set(pid, podUidOfCgroup((await host.readFile(`/proc/${pid}/cgroup`)) ?? ''));
    return podOf.get(pid) ?? null;
  };

  for (const p of (await host.list('/proc')).filter(isPid)) {
    const pid = Number(p);
    const tasks = (await host.list(`/proc/${pid}/task`)).filter(isPid);
    for (const tid of tasks.length > 0 ? tasks : [p]) {
      const base = tasks.length > 0 ? `/proc/${pid}/task/${tid}` : `/proc/${pid}`;
      const ns = (await host.readlink(`${base}/ns/mnt`)) ?? (await host.readlink(`/proc/${pid}/ns/mnt`)) ?? `pid:${pid}`;
      const seen = namespaces.get(ns);
      if (!seen) namespaces.set(ns, { pids: [pid], sample: `${base}/mountinfo` });
      else if (!seen.pids.includes(pid)) seen.pids.push(pid);
    }
    for (const fd of await host.list(`/proc/${pid}/fd`)) {
      if ((await host.readlink(`/proc/${pid}/fd/${fd}`)) === dev) openers.push({ pid, fd, podUid: await podUid(pid) });
    }
  }

  const mounts: MountHolder[] = [];
  for (const [ns, { pids, sample }] of namespaces) {
    const text = await host.readFile(sample);
    if (text === null) continue;
    const ours = parseMountinfo(text).filter((m) => m.source === dev || (majorMinor !== null && m.majorMinor === majorMinor));
    if (ours.length === 0) continue;
    const isHost = ns === hostNamespace;
    const kept = pids.slice(0, PIDS_KEPT);
    const uids = isHost ? [] : [...new Set((await Promise.all(kept.map(podUid))).filter((u): u is string => u !== null))];
    for (const m of ours) {
      mounts.push({
        namespace: ns,
        host: isHost,
        pids: kept,
        podUids: uids,
        mountPoint: m.mountPoint,
        root: m.root,
        fsType: m.fsType,
        source: m.source,
      });
    }
  }
  return { hostNamespace, mounts, openers, kernel: await host.list(`/sys/block/${device}/holders`) };
}
