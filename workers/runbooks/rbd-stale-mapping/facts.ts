import type { NamespacedName } from '../../../src/adapters/kube/lookups.ts';
import type { FencingMode } from './policy.ts';
import type { Watcher } from './watchers.ts';

// Everything plan() decides on; plain data (unit fixtures are these objects).

export interface PodUse extends NamespacedName {
  node?: string;
  phase?: string;
}

/**
 * What a watcher is to us (fence or detach only what maps to something the cluster knows: docs/safety.md):
 * - `requester`: on the node of the pod that cannot mount (its own attempt; never touched);
 * - `ready-node`: a Ready node holds it: release it there (node half);
 * - `not-ready-node`: its node is not Ready (False/Unknown/no condition) or is declared out of
 *   service: fenced once the node's state allows it (NotReady past the grace, or the taint);
 * - `listed-network`: no node has the address, but it lies in an operator-listed network
 *   (RBD_FENCE_CIDRS): fenced;
 * - `unknown-address`: no node has the address and no listed network contains it (an
 *   rbd-mirror daemon, a backup host, a VM outside the cluster): never fenced;
 * - `ambiguous-address`: several nodes list the address: who holds the watch is unknown.
 */
export type WatcherRole = 'requester' | 'ready-node' | 'not-ready-node' | 'listed-network' | 'unknown-address' | 'ambiguous-address';

/** Set by an operator on a node that is shut down (Kubernetes' non-graceful node shutdown). */
export const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';

export interface WatcherNode {
  name: string;
  ready: 'True' | 'False' | 'Unknown' | 'absent';
  /** The Ready condition's lastTransitionTime (ISO 8601); unset: unknown. */
  readySince?: string;
  /** The `node.kubernetes.io/out-of-service` taint, when the node carries it (any effect). */
  outOfService?: { effect: string; value?: string; timeAdded?: string };
  /** Which entry of the Node's status.addresses lists the watcher's IP (`InternalIP`, ...). */
  addressType: string;
}

export interface WatcherFact extends Watcher {
  /** Which listing showed it. */
  seenBy: Array<'listwatchers' | 'status'>;
  /** The one node listing the IP; null when none or several do. */
  node: WatcherNode | null;
  role: WatcherRole;
  /** Pods on that node using the image's PVC, any phase. */
  podsOnNode: PodUse[];
  /** `ambiguous-address`: every node that lists the IP. */
  nodesWithAddress?: string[];
  /** `listed-network`: the RBD_FENCE_CIDRS entry the IP lies in. */
  network?: string;
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
  /** How long a watcher's node must have been NotReady before its client is fenced (policy). */
  fenceNotReadySeconds: number;
}
