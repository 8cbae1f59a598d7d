import type { Holders } from './holders.ts';
import type { Mapping } from './showmapped.ts';

interface PodUse {
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
  /** When observing started (ISO 8601): the time of every fact, and of the steps' evidence. */
  observedAt: string;
  /** Where the mappings were read: `rbd showmapped --format json`, or sysfs without an rbd CLI. */
  mappingsSource: string;
  /** Mappings of the image head (snapshots are not ours to release). */
  mapped: MappedDevice[];
  /** What /dev/rbd/<pool>/<image> points at, as a cross-check of showmapped. */
  byPoolLink: string | null;
  /** Pods that may run here (Pending/Running/Unknown) and use the image's PVC. */
  claimUsersHere: PodUse[];
  runningPodUids: string[];
  /** Pods that may run here but have no uid: their mounts cannot be told from stale ones. */
  podsWithoutUid: string[];
  claimKnown: boolean;
  /** The PVC the job names (the image's), when it names one. */
  claim?: { namespace: string; name: string };
  policy: { force: 'never' | 'no-live-workload'; kubeletRoot: string };
}
