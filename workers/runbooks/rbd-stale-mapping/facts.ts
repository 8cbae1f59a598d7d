import type { NamespacedName } from '../../../src/kube/lookups.ts';
import type { FencingMode } from './policy.ts';
import type { Watcher } from './watchers.ts';

// Everything plan() decides on; plain data (unit fixtures are these objects).

export interface PodUse extends NamespacedName {
  node?: string;
  phase?: string;
}

/**
 * What a watcher is to us:
 * - `requester`: on the node of the pod that cannot mount (its own attempt; never touched);
 * - `ready-node`: a Ready node holds it: release it there (node half);
 * - `not-ready-node`: its node is NotReady/Unknown: fence;
 * - `unknown-address`: no node has this address (deleted, replaced, not a node at all): fence.
 */
export type WatcherRole = 'requester' | 'ready-node' | 'not-ready-node' | 'unknown-address';

export interface WatcherFact extends Watcher {
  /** Which listing showed it. */
  seenBy: Array<'listwatchers' | 'status'>;
  node: { name: string; ready: 'True' | 'False' | 'Unknown' | 'absent' } | null;
  role: WatcherRole;
  /** Pods on that node using the image's PVC, any phase. */
  podsOnNode: PodUse[];
}

export interface StaleMappingFacts {
  pool: string;
  image: string;
  jobKey: string;
  observedAt: string;
  /** null when `rbd info` says the image (or pool) does not exist. */
  imageInfo: { id: string | null; format: 1 | 2; headerObject: string } | null;
  imageError?: string;
  watchers: WatcherFact[];
  /** Watcher lines that did not parse: never acted on. */
  unparsedWatchers: string[];
  /** The requesting pod and its node (from the job, else from the pod list). */
  requester: { pod?: NamespacedName; node?: string };
  volume: { pv: string; claim?: NamespacedName; accessModes: string[] } | null;
  /** Prevention advice (RWO PVC + Deployment RollingUpdate with maxSurge > 0), or null. */
  advice: string | null;
  blocklisted: string[];
  fencing: FencingMode;
  blocklistExpirySeconds: number;
}
