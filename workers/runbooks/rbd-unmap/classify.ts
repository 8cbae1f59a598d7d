import { posix } from 'node:path';
import type { Holders, MountHolder, Opener } from './holders.ts';

// Pure: what each holder of the device is to us. Used by plan() and again by the unmap step when
// `rbd unmap` says busy, so both apply the same rules.
// - stale:      a kubelet mount in the host namespace whose pod no longer runs here (or a global
//               mount no running pod here needs): we unmount it;
// - propagated: the same kubelet mount seen in another namespace (a CSI plugin pod mounts the
//               kubelet root with Bidirectional propagation): it goes with the host's;
// - live:       a running pod here uses it: never touched;
// - leftover:   processes of pods that no longer run here: only a forced unmap gets past them;
// - foreign:    anything else (a mount outside the kubelet root, a process outside any pod): never touched.

export type HolderClass = 'stale' | 'propagated' | 'live' | 'leftover' | 'foreign';

export interface ClassifyContext {
  kubeletRoot: string;
  /** Uids of pods that may run on this node (Pending/Running/Unknown). */
  runningPodUids: string[];
  /** A pod that may run here uses the image's PVC. */
  claimInUseHere: boolean;
}

export interface Classified {
  mounts: Array<MountHolder & { class: HolderClass }>;
  openers: Array<Opener & { class: HolderClass }>;
}

const under = (root: string, p: string): boolean => p.startsWith(`${root.replace(/\/$/, '')}/`);

/** The pod uid in `<kubeletRoot>/pods/<uid>/...`, or null for global (plugins/...) mounts. */
export function podUidOfKubeletPath(kubeletRoot: string, mountPoint: string): string | null {
  const rel = posix.relative(kubeletRoot, mountPoint).split('/');
  return rel[0] === 'pods' && rel[1] ? rel[1] : null;
}

export function classify(h: Holders, ctx: ClassifyContext): Classified {
  const running = new Set(ctx.runningPodUids);
  const hostMounts = h.mounts.filter((m) => m.host);
  const livePodMount = hostMounts.some((m) => {
    const uid = under(ctx.kubeletRoot, m.mountPoint) ? podUidOfKubeletPath(ctx.kubeletRoot, m.mountPoint) : null;
    return uid !== null && running.has(uid);
  });
  const anyPodRunning = (uids: readonly string[]): boolean => uids.some((u) => running.has(u));

  const mounts = h.mounts.map((m): MountHolder & { class: HolderClass } => {
    if (m.host) {
      if (!under(ctx.kubeletRoot, m.mountPoint)) return { ...m, class: 'foreign' };
      const uid = podUidOfKubeletPath(ctx.kubeletRoot, m.mountPoint);
      if (uid !== null) return { ...m, class: running.has(uid) ? 'live' : 'stale' };
      return { ...m, class: ctx.claimInUseHere || livePodMount ? 'live' : 'stale' };
    }
    if (anyPodRunning(m.podUids)) return { ...m, class: 'live' };
    if (under(ctx.kubeletRoot, m.mountPoint) && hostMounts.some((x) => x.mountPoint === m.mountPoint)) return { ...m, class: 'propagated' };
    return { ...m, class: m.podUids.length > 0 ? 'leftover' : 'foreign' };
  });
  const openers = h.openers.map((o): Opener & { class: HolderClass } => {
    if (o.podUid === null) return { ...o, class: 'foreign' };
    return { ...o, class: running.has(o.podUid) ? 'live' : 'leftover' };
  });
  return { mounts, openers };
}

export function describeHolder(x: (MountHolder | Opener) & { class: HolderClass }): string {
  if ('mountPoint' in x) {
    const who = x.host ? 'host namespace' : `namespace ${x.namespace} (pids ${x.pids.join(', ')}${x.podUids.length ? `; pods ${x.podUids.join(', ')}` : ''})`;
    return `${x.class} mount ${x.mountPoint} in the ${who}`;
  }
  return `${x.class} process ${x.pid} (fd ${x.fd}${x.podUid ? `, pod ${x.podUid}` : ', in no pod'})`;
}
