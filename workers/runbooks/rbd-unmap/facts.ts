import type { Holders } from './holders.ts';
import type { Mapping } from './showmapped.ts';

export interface PodUse {
  namespace: string;
  name: string;
  uid?: string;
  phase?: string;
}

export interface MappedDevice extends Mapping {
  /** `major:minor` of /dev/rbdN, when the node exists. */
  majorMinor: string | null;
  /** /sys/bus/rbd/devices/<id>/client_addr: the watcher this mapping holds. */
  clientAddr: string | null;
  holders: Holders;
}

export interface UnmapFacts {
  node: string;
  ranOn: string;
  pool: string;
  image: string;
  watcher: string;
  observedAt: string;
  /** Mappings of the image head (snapshots are not ours to release). */
  mapped: MappedDevice[];
  /** What /dev/rbd/<pool>/<image> points at, as a cross-check of showmapped. */
  byPoolLink: string | null;
  /** Pods that may run here (Pending/Running/Unknown) and use the image's PVC. */
  claimUsersHere: PodUse[];
  runningPodUids: string[];
  claimKnown: boolean;
  policy: { force: 'never' | 'no-live-workload'; kubeletRoot: string };
}
