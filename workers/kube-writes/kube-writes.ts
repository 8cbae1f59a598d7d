// The Kubernetes write port: every change a runbook makes to the cluster's state goes through it,
// as every change to the node goes through the Host port (workers/host/host.ts). The engine wraps
// it as it wraps the Host: audited in enforce, simulated in dry-run and when it shows a parked
// job's remaining steps (planned-commands.ts), so a parked, dry-run or refused job cannot write.
// Reads stay in each side's lookups; this port is writes only, so a reviewer finds them in one place.
// The requests and PreconditionFailedError live with the adapters that send them
// (src/adapters/kube/write-requests.ts, api-kube-writes.ts); they are re-exported here for the runbooks.

import type { DeletePodRequest, PatchNodeTaintsRequest, StepEvent } from '../../src/adapters/kube/write-requests.ts';

export {
  type DeletePodRequest,
  type JsonPatchOp,
  type ObjectRef,
  type PatchNodeTaintsRequest,
  PreconditionFailedError,
  type StepEvent,
} from '../../src/adapters/kube/write-requests.ts';

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
