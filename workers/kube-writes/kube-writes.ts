// The Kubernetes write port: every change a runbook makes to the cluster's state goes through it,
// as every change to the node goes through the Host port (workers/host/host.ts). The engine wraps
// it as it wraps the Host: audited in enforce, simulated in dry-run and when it shows a parked
// job's remaining steps (planned-commands.ts), so a parked, dry-run or refused job cannot write.
// Reads stay in each side's lookups; this port is writes only, so a reviewer finds them in one place.

/** RFC 6902 operations, the only patch shape the port sends: `test` ops pin what the change assumes. */
export type JsonPatchOp =
  | { op: 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'add' | 'replace'; path: string; value: unknown };

export interface ObjectRef {
  kind: 'Node' | 'Pod' | 'PersistentVolume' | 'PersistentVolumeClaim';
  name: string;
  /** Namespaced kinds only. */
  namespace?: string;
  uid?: string;
}

export interface DeletePodRequest {
  namespace: string;
  name: string;
  /** DeleteOptions.preconditions: the API server refuses (409) when the pod is not this one any more. */
  uid: string;
  resourceVersion: string;
  /** Left to the pod's own terminationGracePeriodSeconds when absent. */
  gracePeriodSeconds?: number;
  /** Why, for the audit record and the Event. */
  reason: string;
}

export interface PatchNodeTaintsRequest {
  node: string;
  /** Sent as application/json-patch+json; starts with the `test` ops that pin the taint and resourceVersion. */
  ops: JsonPatchOp[];
  reason: string;
}

export interface StepEvent {
  involved: ObjectRef;
  /** CamelCase, volume-medic's part (`ReadOnlyVolumeRecovery`, `OutOfServiceTaintReleased`). */
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
}

/** A precondition the API server refused (409 Conflict, or 422 for a failed `test` op): observe and plan again. */
export class PreconditionFailedError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = 'PreconditionFailedError';
    this.status = status;
  }
}

export interface KubeWrites {
  /** DELETE with preconditions {uid, resourceVersion}. Resolves false on 404 (already gone); throws PreconditionFailedError on 409. */
  deletePod(request: DeletePodRequest): Promise<boolean>;
  /** PATCH of the Node with a JSON patch (never a merge or strategic patch of spec.taints). Throws PreconditionFailedError on 409/422. */
  patchNodeTaints(request: PatchNodeTaintsRequest): Promise<void>;
  /** A step's own Event: it reports, it changes nothing, but a dry-run still only records it. */
  event(event: StepEvent): Promise<void>;
}

/** The audit trail's argv for each write: the console and planned-commands.ts show them as commands. */
export const kubeWriteArgv = {
  deletePod: (r: DeletePodRequest): string[] => [
    'kube:delete-pod',
    `${r.namespace}/${r.name}`,
    `uid=${r.uid}`,
    `rv=${r.resourceVersion}`,
    ...(r.gracePeriodSeconds === undefined ? [] : [`grace=${r.gracePeriodSeconds}`]),
  ],
  patchNodeTaints: (r: PatchNodeTaintsRequest): string[] => ['kube:patch-node', r.node, JSON.stringify(r.ops)],
  event: (e: StepEvent): string[] => [
    'kube:event',
    `${e.involved.kind}/${e.involved.namespace ? `${e.involved.namespace}/` : ''}${e.involved.name}`,
    e.type,
    e.reason,
    e.message,
  ],
} as const;

/** For a process that has no Kubernetes write access (tests, an agent built without it): every write fails loudly. */
export const NO_KUBE_WRITES: KubeWrites = {
  deletePod: () => Promise.reject(new Error('this process has no Kubernetes write access (no KubeWrites configured)')),
  patchNodeTaints: () => Promise.reject(new Error('this process has no Kubernetes write access (no KubeWrites configured)')),
  event: () => Promise.reject(new Error('this process has no Kubernetes write access (no KubeWrites configured)')),
};
