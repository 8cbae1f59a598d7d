import type { OutOfServiceTaintReleaseJob } from '../../../src/core/catalogue/jobs.ts';
import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import { attachmentsClaim, bootClaim, type Claim, hostCleanClaim, readyClaim, remediatorClaim, terminatingClaim } from './claims.ts';
import { ipOf } from '../rbd-stale-mapping/watchers.ts';
import { OUT_OF_SERVICE_TAINT, type NodeState, type TaintReleaseFacts } from './facts.ts';
import type { TaintReleaseStep } from './step.ts';

// plan(facts) -> the two steps or the named refusals, no I/O (docs/decisions/0008 §4.3-4.4).
// Every claim is asked, so a refusal lists everything that holds the taint, not only the first.
// Ready for too short a time is not a refusal: its evidence carries a persistence, and the
// engine parks the job until the grace has passed (workers/engine/judge-evidence.ts).

const taintText = (t: { key: string; value?: string; effect: string }): string => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;

export function plan(f: TaintReleaseFacts, job: OutOfServiceTaintReleaseJob): Plan<TaintReleaseStep> {
  if (!f.nodeState.ok) return { kind: 'refuse', reasons: [`node-unreadable: Node ${f.node} could not be read (${f.nodeState.error})`] };
  const n = f.nodeState.value;
  if (!n) return { kind: 'nothing-to-do', summary: `Node ${f.node} does not exist any more: no taint to release` };
  const taint = n.taints[n.oosIndex];
  if (!taint) return { kind: 'nothing-to-do', summary: `Node ${f.node} carries no ${OUT_OF_SERVICE_TAINT} taint (any more)` };
  // Compared as times: the watch records them as ISO text with milliseconds, the API server writes seconds.
  if (job.taint.timeAdded !== undefined && Date.parse(taint.timeAdded ?? '') !== Date.parse(job.taint.timeAdded)) {
    return {
      kind: 'refuse',
      reasons: [
        `taint-changed: the job is about the taint added at ${job.taint.timeAdded}, the Node now carries ${taintText(taint)} added at ${taint.timeAdded ?? 'an unrecorded time'}: a taint added again is judged on its own first sight`,
      ],
    };
  }
  const claims: Claim[] = [bootClaim(f, n, job), remediatorClaim(f, n), attachmentsClaim(f), terminatingClaim(f), hostCleanClaim(f, n), readyClaim(f, n)];
  const reasons = claims.flatMap((c) => ('refuse' in c ? [c.refuse] : []));
  if (reasons.length > 0) return { kind: 'refuse', reasons };
  const evidence = claims.flatMap((c) => ('holds' in c ? [c.holds] : []));
  evidence.push({
    claim: `the taint is ${taintText(taint)} added at ${taint.timeAdded ?? '(no time)'}, at index ${n.oosIndex} of resourceVersion ${n.resourceVersion}`,
    source: `Node ${f.node} spec.taints, metadata.resourceVersion`,
    observedAt: f.observedAt,
    status: 'holds',
  });
  const steps = [...blocklistSteps(f, n, job, evidence), removeTaintStep(f, n, job, evidence)];
  const fence = f.networkFence.state === 'present' ? `; removing it makes Rook unfence the node in Ceph (NetworkFence ${f.node})` : '';
  return { kind: 'steps', summary: `release ${OUT_OF_SERVICE_TAINT} of node ${f.node} (boot ${n.bootId})${fence}${blocklistNote(f)}`, steps };
}

function blocklistNote(f: TaintReleaseFacts): string {
  return f.ourBlocklist.ok ? '' : `; our blocklist entries for the node could not be read (${f.ourBlocklist.error}), none is removed`;
}

/** Our own `blocklist add` entries of this node's addresses that Ceph still lists: lifted before the taint. */
function blocklistSteps(f: TaintReleaseFacts, n: NodeState, job: OutOfServiceTaintReleaseJob, evidence: StepEvidence[]): TaintReleaseStep[] {
  if (!f.ourBlocklist.ok) return [];
  return f.ourBlocklist.value
    .filter((e) => e.listed && n.addresses.includes(ipOf(e.address)))
    .map((e) => ({
      kind: 'blocklist-rm' as const,
      id: `blocklist-rm:${e.address}`,
      description: `ceph osd blocklist rm ${e.address}: the entry volume-medic added (job ${e.job}, ${e.addedAt}) for node ${f.node}, which came back on boot ${n.bootId}`,
      destructive: true,
      risk: 'high' as const,
      node: f.node,
      address: e.address,
      bootIdNow: n.bootId ?? '',
      ...(job.taint.bootIdAtFirstSight ? { bootIdAtFirstSight: job.taint.bootIdAtFirstSight } : {}),
      evidence: [
        ...evidence,
        {
          claim: `${e.address} was blocklisted by volume-medic (job ${e.job}) and is still listed`,
          source: 'the blocklist undo record; ceph osd blocklist ls',
          observedAt: f.observedAt,
          status: 'holds' as const,
        },
      ],
    }));
}

function removeTaintStep(f: TaintReleaseFacts, n: NodeState, job: OutOfServiceTaintReleaseJob, evidence: StepEvidence[]): TaintReleaseStep {
  const taint = n.taints[n.oosIndex]!;
  const fence = f.networkFence.state === 'present' ? f.networkFence : undefined;
  const cleanup = f.cleanupJobs.ok ? f.cleanupJobs.value.map((j) => j.id) : [];
  return {
    kind: 'remove-taint',
    id: `remove-taint:${f.node}:${taint.timeAdded ?? 'none'}`,
    description:
      `remove ${taintText(taint)} (added ${taint.timeAdded ?? 'at an unrecorded time'}) from node ${f.node}: a JSON patch that tests resourceVersion ${n.resourceVersion} and the taint at index ${n.oosIndex}, then removes that index; every other taint stays` +
      (fence
        ? `. Rook's NetworkFence ${f.node} fences the node in Ceph (${fence.cidrs.join(', ') || 'no cidrs listed'}): removing the taint makes Rook delete it and csi-addons run \`ceph osd blocklist rm\` for those addresses, so this step is also the Ceph unfence`
        : f.networkFence.state === 'unknown'
          ? `. Whether Rook fences the node in Ceph could not be read (${f.networkFence.error}); on a Rook cluster removing the taint is also the Ceph unfence`
          : ''),
    destructive: true,
    risk: 'high',
    node: f.node,
    resourceVersion: n.resourceVersion,
    index: n.oosIndex,
    taint,
    otherTaints: n.taints.filter((_, i) => i !== n.oosIndex),
    bootIdNow: n.bootId ?? '',
    ...(job.taint.bootIdAtFirstSight ? { bootIdAtFirstSight: job.taint.bootIdAtFirstSight } : {}),
    cleanupJobs: cleanup,
    ...(fence ? { networkFence: { cidrs: fence.cidrs } } : {}),
    evidence,
  };
}
