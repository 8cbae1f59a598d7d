import type { OutOfServiceTaintReleaseJob } from '../../../src/core/catalogue/jobs.ts';
import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import { type CleanupJobFact, EXCLUDE_LABEL, LEASE_MAX_AGE_SECONDS, type NodeState, type TaintReleaseFacts } from './facts.ts';

// The claims of docs/decisions/0008 §4.3, one function each: every one answers a named refusal
// (`<reason>: <what was seen>`) or the evidence item the step stands on. Unknown means refuse: a
// read that failed is never taken as "none there".

export type Claim = { refuse: string } | { holds: StepEvidence };

type Item = (claim: string, source: string, detail: string, extra?: Partial<StepEvidence>) => Claim;
const itemAt =
  (at: string): Item =>
  (claim, source, detail, extra = {}) => ({ holds: { claim, source, observedAt: at, status: 'holds', detail, ...extra } });

const list = (xs: readonly string[], max = 5): string => (xs.length > max ? `${xs.slice(0, max).join(', ')} and ${xs.length - max} more` : xs.join(', '));

/** The node booted since it was declared out of service: a new boot id, or kubelet's Rebooted Event after the taint. */
export function bootClaim(f: TaintReleaseFacts, n: NodeState, job: OutOfServiceTaintReleaseJob): Claim {
  const item = itemAt(f.observedAt);
  const since = job.taint.timeAdded ?? job.taint.firstSeenAt;
  const first = job.taint.bootIdAtFirstSight;
  const claim = `node ${f.node} booted since it was declared out of service at ${since}`;
  const source = `Node ${f.node} status.nodeInfo.bootID against the boot recorded at the taint's first sight; kubelet Rebooted Events`;
  if (!n.bootId) return { refuse: `boot-unknown: Node ${f.node} reports no status.nodeInfo.bootID, so a power cycle since the taint cannot be told` };
  const after = f.rebooted.ok ? f.rebooted.value.filter((e) => Date.parse(e.at) > Date.parse(since)) : [];
  const event = after.length ? `; kubelet's Rebooted Event at ${after.map((e) => e.at).join(', ')}` : '';
  if (first && first !== n.bootId) return item(claim, source, `boot ${first} at the taint's first sight (${job.taint.firstSeenAt}), ${n.bootId} now${event}`);
  if (after.length > 0) return item(claim, source, `boot ${n.bootId} now${first ? ` (also at the first sight: seen after the reboot)` : ''}${event}`);
  if (first) {
    return {
      refuse: `same-boot: Node ${f.node} still runs boot ${n.bootId}, the one it ran when the taint was first seen (${job.taint.firstSeenAt}), and no Rebooted Event after ${since}${f.rebooted.ok ? '' : ` (Events unreadable: ${f.rebooted.error})`}: it did not power-cycle since it was declared out of service and may be a partitioned node that was never fenced`,
    };
  }
  return {
    refuse: `boot-unknown: no boot id was recorded when the taint was first seen and ${f.rebooted.ok ? `no kubelet Rebooted Event after ${since} is listed` : `the Events could not be read (${f.rebooted.error})`}: whether node ${f.node} power-cycled cannot be told (Events expire after an hour)`,
  };
}

/** Ready for OOS_READY_GRACE_SECONDS (persistence: the engine parks until then) with a fresh kubelet Lease. */
export function readyClaim(f: TaintReleaseFacts, n: NodeState): Claim {
  const r = 'not-ready-long-enough';
  if (n.ready !== 'True') return { refuse: `${r}: Node ${f.node} is not Ready (Ready=${n.ready ?? 'not reported'})` };
  if (!n.readySince) return { refuse: `${r}: Node ${f.node} is Ready but since when is not recorded (no lastTransitionTime)` };
  if (!f.leaseRenewTime.ok) return { refuse: `${r}: the kubelet Lease kube-node-lease/${f.node} could not be read (${f.leaseRenewTime.error})` };
  const renew = f.leaseRenewTime.value;
  const age = renew ? (Date.parse(f.observedAt) - Date.parse(renew)) / 1000 : Number.NaN;
  if (!renew || !(age <= LEASE_MAX_AGE_SECONDS)) {
    return {
      refuse: `${r}: the kubelet of ${f.node} is not heartbeating (Lease kube-node-lease/${f.node} renewed ${renew ?? 'never'}; at most ${LEASE_MAX_AGE_SECONDS} s ago is needed)`,
    };
  }
  return itemAt(f.observedAt)(
    `node ${f.node} has been Ready for ${f.readyGraceSeconds} s and its kubelet heartbeats`,
    `Node ${f.node} status.conditions[type=Ready].lastTransitionTime; Lease kube-node-lease/${f.node} spec.renewTime`,
    `Ready since ${n.readySince}; Lease renewed ${renew} (${Math.round(age)} s before observe)`,
    { persistence: { since: n.readySince, samples: 1, minSamples: 1, acrossBoot: false, mustHoldMs: f.readyGraceSeconds * 1000 } },
  );
}

export function attachmentsClaim(f: TaintReleaseFacts): Claim {
  const r = 'volume-attachment-left';
  if (!f.volumeAttachments.ok)
    return { refuse: `${r}: the VolumeAttachments could not be listed (${f.volumeAttachments.error}), so none left on ${f.node} cannot be told` };
  if (f.volumeAttachments.value.length > 0) {
    return {
      refuse: `${r}: VolumeAttachment ${list(f.volumeAttachments.value)} still names node ${f.node} (spec.nodeName); it may be the one the node still holds of a volume given to another node`,
    };
  }
  return itemAt(f.observedAt)(`no VolumeAttachment names node ${f.node}`, 'storage.k8s.io VolumeAttachments spec.nodeName', 'none');
}

export function terminatingClaim(f: TaintReleaseFacts): Claim {
  const r = 'terminating-pod-left';
  if (!f.terminatingPods.ok) return { refuse: `${r}: the pods on ${f.node} could not be listed (${f.terminatingPods.error})` };
  if (f.terminatingPods.value.length > 0) {
    return {
      refuse: `${r}: pod ${list(f.terminatingPods.value)} bound to node ${f.node} is Terminating; once the node is Ready pod GC no longer force-deletes it, the kubelet must finish it first`,
    };
  }
  return itemAt(f.observedAt)(`no pod bound to node ${f.node} is Terminating`, `Pods fieldSelector=spec.nodeName=${f.node} metadata.deletionTimestamp`, 'none');
}

export function remediatorClaim(f: TaintReleaseFacts, n: NodeState): Claim {
  const r = 'another-remediator-owns-taint';
  const exclude = n.labels[EXCLUDE_LABEL];
  if (exclude !== undefined) return { refuse: `${r}: node ${f.node} carries the label ${EXCLUDE_LABEL}=${exclude}: it is left to whoever set it` };
  const unknown = f.remediators.filter((x) => x.state === 'unknown');
  if (unknown.length > 0) {
    return {
      refuse: `${r}: cannot tell whether a remediator owns the taint: ${unknown.map((x) => `${x.kind} list: ${x.state === 'unknown' ? x.error : ''}`).join('; ')}`,
    };
  }
  const found = f.remediators.flatMap((x) => (x.state === 'listed' ? x.names.map((name) => `${x.kind} ${name}`) : []));
  if (found.length > 0) return { refuse: `${r}: ${list(found)} names node ${f.node}; it removes the taint itself when its remediation ends` };
  const absent = f.remediators.filter((x) => x.state === 'absent-crd').map((x) => x.kind);
  return itemAt(f.observedAt)(
    `no SelfNodeRemediation, FenceAgentsRemediation or Metal3Remediation names node ${f.node}, and it is not excluded from remediation`,
    `medik8s and metal3 remediation lists; Node ${f.node} label ${EXCLUDE_LABEL}`,
    absent.length ? `not installed: ${absent.join(', ')}` : 'none listed',
  );
}

const CLEAN = new Set(['succeeded', 'nothing-to-do']);

/** rbd-unmap jobs of the node that finished since it became Ready, or have not finished. */
const unmapsSinceReady = (jobs: readonly CleanupJobFact[], n: NodeState): CleanupJobFact[] => {
  const since = Date.parse(n.readySince ?? '');
  return jobs.filter((j) => j.runbook === 'rbd-unmap' && (j.finishedAt === undefined || !(Date.parse(j.finishedAt) < since)));
};

const FINISHED = new Set(['completed', 'failed']);

/**
 * The node half of this boot that has not finished yet (stored, running, retrying): the release
 * waits for it (the job is retried) instead of refusing on a clean-up that may still succeed.
 */
export function unfinishedCleanup(f: TaintReleaseFacts, n: NodeState): CleanupJobFact[] {
  if (!f.cleanupJobs.ok) return [];
  const residual = f.cleanupJobs.value.filter((j) => j.runbook === 'residual-multipath-cleanup' && j.bootId === n.bootId);
  return [...residual, ...unmapsSinceReady(f.cleanupJobs.value, n)].filter((j) => !FINISHED.has(j.state));
}

/** The node half of this boot cleaned the host: residual-multipath-cleanup of the boot, and every rbd-unmap since the node came back. */
export function hostCleanClaim(f: TaintReleaseFacts, n: NodeState): Claim {
  const r = 'host-not-clean';
  if (!f.cleanupJobs.ok) return { refuse: `${r}: the node's clean-up jobs could not be read (${f.cleanupJobs.error})` };
  const residual = f.cleanupJobs.value.filter((j) => j.runbook === 'residual-multipath-cleanup' && j.bootId === n.bootId);
  if (residual.length === 0) {
    return { refuse: `${r}: no residual-multipath-cleanup job of boot ${n.bootId} on node ${f.node} is known; it must run (and find the host clean) first` };
  }
  const unmaps = unmapsSinceReady(f.cleanupJobs.value, n);
  const bad = [...residual, ...unmaps].filter((j) => j.state !== 'completed' || !CLEAN.has(j.outcome ?? ''));
  if (bad.length > 0) {
    const what = bad.map(
      (j) => `${j.runbook} ${j.id} ${j.state === 'completed' ? (j.outcome ?? 'without a result') : j.state}${j.summary ? ` (${j.summary.slice(0, 200)})` : ''}`,
    );
    return { refuse: `${r}: ${what.join('; ')}: the host keeps what the storage gave away until its clean-up of this boot succeeds` };
  }
  return itemAt(f.observedAt)(
    `the clean-up of boot ${n.bootId} left node ${f.node} clean`,
    'job store: residual-multipath-cleanup and rbd-unmap results on the node',
    [...residual, ...unmaps].map((j) => `${j.runbook} ${j.id} ${j.outcome}`).join('; '),
  );
}
