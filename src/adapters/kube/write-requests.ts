// What the Kubernetes write port (workers/kube-writes/kube-writes.ts) asks the API server to do,
// and the one refusal a runbook must tell from any other failure. Here, beside the lookups, because
// the implementations that send them (api-kube-writes.ts) are adapters; workers re-export them.

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
