// Everything plan() decides on; plain data (unit fixtures are these objects). Each fact that comes
// from a read that can fail is a Read: a failed read is `missing`, which every claim takes as
// "cannot tell", never as "none there".

export const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';
/** medik8s' opt-out label: a node carrying it is left to its owner. */
export const EXCLUDE_LABEL = 'remediation.medik8s.io/exclude-from-remediation';
/** A kubelet that renews its Lease less recently than this is not heartbeating (it renews every 10 s). */
export const LEASE_MAX_AGE_SECONDS = 40;

export type Read<T> = { ok: true; value: T } | { ok: false; error: string };

/** A taint exactly as spec.taints holds it: the patch's `test` op compares this object. */
export interface TaintAsSpec {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface NodeState {
  resourceVersion: string;
  /** spec.taints as listed, in order. */
  taints: TaintAsSpec[];
  /** Index in `taints` of the first out-of-service taint; -1: none. */
  oosIndex: number;
  bootId?: string;
  ready?: string;
  /** The Ready condition's lastTransitionTime (RFC 3339). */
  readySince?: string;
  labels: Record<string, string>;
  addresses: string[];
}

export type RemediatorKind = 'SelfNodeRemediation' | 'FenceAgentsRemediation' | 'Metal3Remediation';

/** One remediator's objects naming the node; `unknown`: the list was refused (403) or failed. */
export type RemediatorFact =
  | { kind: RemediatorKind; state: 'absent-crd' | 'listed'; names: string[] }
  | { kind: RemediatorKind; state: 'unknown'; error: string };

/** Rook's NetworkFence named after the node (csiaddons.openshift.io, cluster-scoped). */
export type NetworkFenceFact = { state: 'none' } | { state: 'present'; fenceState?: string; cidrs: string[] } | { state: 'unknown'; error: string };

/** A finished (or not) job of the node half: residual-multipath-cleanup or rbd-unmap on this node. */
export interface CleanupJobFact {
  runbook: 'residual-multipath-cleanup' | 'rbd-unmap';
  id: string;
  state: string;
  /** The job's boot (residual-multipath-cleanup carries it). */
  bootId?: string;
  /** When it finished (RFC 3339). */
  finishedAt?: string;
  /** RunbookResult.outcome when it finished: succeeded, nothing-to-do, refused, failed. */
  outcome?: string;
  summary?: string;
}

/** Our own `ceph osd blocklist add` of an address of this node, and whether Ceph still lists it. */
export interface OurBlocklistEntry {
  address: string;
  job: string;
  addedAt: string;
  listed: boolean;
}

export interface TaintReleaseFacts {
  node: string;
  /** When observe started: every evidence item is dated by it. */
  observedAt: string;
  /** undefined: the Node does not exist. */
  nodeState: Read<NodeState | undefined>;
  /** The Lease's spec.renewTime in kube-node-lease; undefined: no Lease. */
  leaseRenewTime: Read<string | undefined>;
  /** kubelet's `Rebooted` Events on the Node (time and the boot id its message names). */
  rebooted: Read<{ at: string; bootId?: string }[]>;
  volumeAttachments: Read<string[]>;
  /** `<namespace>/<name>` of pods bound to the node with a deletionTimestamp. */
  terminatingPods: Read<string[]>;
  remediators: RemediatorFact[];
  networkFence: NetworkFenceFact;
  cleanupJobs: Read<CleanupJobFact[]>;
  ourBlocklist: Read<OurBlocklistEntry[]>;
  readyGraceSeconds: number;
}
