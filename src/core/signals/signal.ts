import type { Evidence } from '../catalogue/evidence.ts';

// Signals are what sources recognised in a payload, before triage decides what to do. Values in
// a signal are as the sender wrote them: triage validates every name before it reaches a job.
// `identity` is the event's own identity (alert fingerprint + startsAt, event uid, node + boot
// id...), from which triage derives idempotency keys; it never contains a clock reading of ours.

interface SignalBase {
  version: 1;
  identity: readonly string[];
  evidence: Evidence;
}

export interface NodeRecoveredSignal extends SignalBase {
  kind: 'node-recovered';
  node: string;
  bootId?: string;
}

export interface RbdImageBusySignal extends SignalBase {
  kind: 'rbd-image-busy';
  pool: string;
  image: string;
  /** The pod whose Event said so: triage acts only when the cluster confirms it uses this image. */
  pod: { namespace: string; name: string };
  /** The node of the pod that cannot mount: where the image is wanted, not where it is held. */
  node?: string;
}

export interface LocalDeviceMissingSignal extends SignalBase {
  kind: 'local-device-missing';
  pv?: string;
  path?: string;
  /**
   * The pod whose Event reported it (a kubelet Event; NPD's name no pod). Set, triage acts only on
   * a PV the cluster confirms the pod uses; containerd's message names nothing else.
   */
  pod?: { namespace: string; name: string };
  /** Node as the sender saw it; the PV's node affinity wins when the PV is known. */
  node?: string;
}

export interface LocalDeviceRestoredSignal extends SignalBase {
  kind: 'local-device-restored';
  pv?: string;
  path?: string;
  node?: string;
}

/**
 * A Node that is Ready while it carries `node.kubernetes.io/out-of-service`: only the receiver's
 * own Node watch makes it, with the taint's first sight from its record (taint-sightings.ts).
 */
export interface NodeOutOfServiceReadySignal extends SignalBase {
  kind: 'node-out-of-service-ready';
  node: string;
  taint: { timeAdded?: string; bootIdAtFirstSight?: string; firstSeenAt: string };
  /** The boot the node runs now. */
  bootId?: string;
}

/** kubelet's "orphaned pod <uid> found, but ..." line, as NPD's kubelet monitor turned it into an Event on the Node. */
export interface OrphanedPodVolumesSignal extends SignalBase {
  kind: 'orphaned-pod-volumes';
  node: string;
  /** The first orphan of kubelet's sweep (the line names one even when there are more). */
  podUid: string;
}

/**
 * NPD says some file system on a node went read-only (ReadonlyFilesystem / FilesystemIsReadOnly) or
 * an XFS shut down (XfsHasShutdown). Its rule carries no device, and the condition is never
 * cleared: a trigger only; the node agent finds the device and the PV itself.
 */
export interface FilesystemReadonlySignal extends SignalBase {
  kind: 'filesystem-readonly';
  node: string;
}

/**
 * A VolumeMedicRemediation object (medik8s' External Remediation API: NodeHealthCheck made it for an
 * unhealthy node): only the receiver's watch on those objects makes it (docs/node-healthcheck.md).
 */
export interface NodeRemediationRequestedSignal extends SignalBase {
  kind: 'node-remediation-requested';
  node: string;
  /** The object that asked: its uid is the job's identity, one job per object whatever its updates. */
  remediation: { namespace: string; name: string; uid: string };
}

export type Signal =
  | NodeRecoveredSignal
  | NodeRemediationRequestedSignal
  | RbdImageBusySignal
  | LocalDeviceMissingSignal
  | LocalDeviceRestoredSignal
  | NodeOutOfServiceReadySignal
  | OrphanedPodVolumesSignal
  | FilesystemReadonlySignal;
