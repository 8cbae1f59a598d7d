import { pino } from 'pino';
import type { JobOf } from '../../src/core/catalogue/jobs.ts';
import type { StepEvidence } from '../../src/core/catalogue/step-evidence.ts';
import type { StepGate } from '../../workers/engine/gate.ts';
import type { RunbookContext } from '../../workers/engine/registry.ts';
import type { Plan, PlannedStep, RunbookDefinition, StepExecutor } from '../../workers/engine/runbook.ts';
import { kubeWriteArgv, type JsonPatchOp } from '../../workers/kube-writes/kube-writes.ts';

// A runbook made for the write port's tests (not one of the catalogue's): its steps delete a pod
// and remove a Node's taint through the `kube` the engine hands them, as readonly-filesystem-recovery
// and out-of-service-taint-release will. The tests run it parked, in dry-run, refused by its plan
// or by its evidence, and in enforce, against a recording port (unit) or the fake API server (int).

export const POD = { namespace: 'shop', name: 'db-0', uid: '6f1c1a0e-0000-4000-8000-000000000001', resourceVersion: '812' };
export const NODE = 'worker-1';
export const TAINT = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: '2026-12-07T08:00:00Z' };

export type WriteStep = PlannedStep & ({ kind: 'delete-pod'; pod: typeof POD } | { kind: 'remove-taint'; node: string; ops: JsonPatchOp[] });

const evidence = (claim: string, observedAt: Date, status: StepEvidence['status'] = 'holds'): StepEvidence[] => [
  { claim, source: 'test', observedAt: observedAt.toISOString(), status },
];

/** Step 1: delete the pod with its uid and resourceVersion as preconditions; high risk. */
export function deletePodStep(o: { observedAt?: Date; status?: StepEvidence['status']; pod?: typeof POD } = {}): WriteStep {
  const pod = o.pod ?? POD;
  return {
    id: `delete-pod:${pod.namespace}/${pod.name}:${pod.uid}`,
    description: `delete pod ${pod.namespace}/${pod.name} on a read-only volume`,
    destructive: true,
    risk: 'high',
    kind: 'delete-pod',
    pod,
    evidence: evidence('the pod uses a file system the kernel made read-only', o.observedAt ?? new Date(), o.status),
  };
}

/** Step 2: remove the taint at index `index` with test ops on it and on the Node's resourceVersion (decision 0008 §4.4). */
export function removeTaintStep(o: { resourceVersion: string; index?: number; taint?: typeof TAINT }): WriteStep {
  const index = o.index ?? 0;
  return {
    id: `remove-taint:${NODE}:${TAINT.timeAdded}`,
    description: `remove the out-of-service taint of ${NODE}`,
    destructive: true,
    risk: 'high',
    kind: 'remove-taint',
    node: NODE,
    ops: [
      { op: 'test', path: '/metadata/resourceVersion', value: o.resourceVersion },
      { op: 'test', path: `/spec/taints/${index}`, value: o.taint ?? TAINT },
      { op: 'remove', path: `/spec/taints/${index}` },
    ],
    evidence: evidence('the node booted since it was declared out of service', new Date()),
  };
}

/** What the delete step writes, as its audit argv. */
export const deletePodArgv = (pod = POD): string[] => kubeWriteArgv.deletePod({ ...pod, reason: '' });

const executor: StepExecutor<WriteStep> = {
  // Only looks (and here: never done), as isDone must.
  isDone: async () => false,
  async apply(step, _host, kube) {
    if (step.kind === 'delete-pod') {
      await kube.deletePod({ ...step.pod, reason: step.description });
      await kube.event({
        involved: { kind: 'Pod', namespace: step.pod.namespace, name: step.pod.name, uid: step.pod.uid },
        reason: 'ReadOnlyVolumeRecovery',
        message: step.description,
        type: 'Warning',
      });
    } else {
      await kube.patchNodeTaints({ node: step.node, ops: step.ops, reason: step.description });
    }
  },
};

/** The runbook: its plan is `plan` (a refusal, or these steps). */
export function writeRunbook(plan: Plan<WriteStep>): RunbookDefinition<'readonly-filesystem-recovery', null, WriteStep> {
  return {
    runbook: 'readonly-filesystem-recovery',
    observe: async () => null,
    plan: () => plan,
    steps: executor,
    verify: async () => ({ ok: true, checks: [] }),
  };
}

export const JOB: JobOf<'readonly-filesystem-recovery'> = {
  version: 1,
  key: 'readonly_fs_0123456789ab',
  runbook: 'readonly-filesystem-recovery',
  target: { node: NODE },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};

/** A gate that parks every high-risk step for approval, as APPROVAL_HIGH_RISK does. */
export const APPROVAL_GATE: StepGate = {
  beforeStep: async (s) => (s.risk === 'high' ? { go: false, park: { reason: 'approval', why: 'high risk: an operator must approve' } } : { go: true }),
};

export function context(mode: RunbookContext['mode'], gate?: StepGate): RunbookContext {
  return {
    jobId: JOB.key,
    attempt: 1,
    mode,
    ranOn: NODE,
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    ...(gate ? { gate } : {}),
  };
}
