import { idempotencyKey } from '../../../src/core/catalogue/idempotency-keys.ts';
import type { RbdStaleMappingJob, RbdUnmapJob } from '../../../src/core/catalogue/jobs.ts';
import { planProblems } from '../../engine/judge-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import { fenceEvidence } from './fence-evidence.ts';
import { OUT_OF_SERVICE_TAINT, type StaleMappingFacts, type WatcherFact } from './facts.ts';
import type { StaleMappingStep } from './step.ts';

// plan(facts) -> steps or a refusal, no I/O. Order of questions: does the image exist, is it a
// PersistentVolume's of this cluster (else refuse: not ours), who watches it, is any of them a
// real second user (refuse), then per watcher: a Ready node gets the
// node half; a client of a node that is NotReady past the grace or out of service, or in an
// operator-listed network, is fenced (by policy) on the evidence of fence-evidence.ts; an address
// that maps to no known node (or to several) is refused, never fenced.

const RUNNING = new Set(['Running', 'Pending', 'Unknown']);

/** The node half's key: the parent's key and the watcher, so a repeat of either folds. */
export function unmapJobKey(parentKey: string, watcher: string): string {
  return idempotencyKey('rbdunmap', [parentKey, watcher]);
}

const blocklistUndo = (address: string): string[] => ['ceph', 'osd', 'blocklist', 'rm', address];

/** One watcher's part of the plan: its step, or the reason it is not released. */
type WatcherPlan = { step: StaleMappingStep } | { reason: string };

export function plan(f: StaleMappingFacts, job: RbdStaleMappingJob): Plan<StaleMappingStep> {
  const spec = `${f.pool}/${f.image}`;
  const withAdvice = (text: string): string => (f.advice ? `${text}. Prevention: ${f.advice}` : text);
  const refuse = (...reasons: string[]): Plan<StaleMappingStep> => ({
    kind: 'refuse',
    reasons: f.advice ? [...reasons, `prevention: ${f.advice}`] : reasons,
  });

  if (!f.imageInfo) return refuse(`rbd image ${spec} does not exist (${f.imageError ?? 'rbd info failed'}): nothing to release`);
  // The job may stem from an Event anyone could write in their own namespace. An
  // image no PV names is some other user's of the Ceph cluster (another cluster, rbd-mirror, a
  // VM disk): never fenced nor unmapped on the word of an Event.
  if (!f.volume) {
    return refuse(
      `rbd image ${spec} belongs to no PersistentVolume of this cluster (no PV's CSI volumeAttributes pool + imageName, nor an rbd volume source, names it): not releasing it`,
    );
  }
  if (f.unparsedWatchers.length > 0) {
    return refuse(`watchers of ${spec} that cannot be read: ${f.unparsedWatchers.join(' | ')}; not acting on a listing we do not understand`);
  }
  const others = f.watchers.filter((w) => w.role !== 'requester');
  if (others.length === 0) {
    const ignored = f.watchers.length > 0 ? ` (only the requesting node ${f.requester.node ?? ''} watches it)` : '';
    return { kind: 'nothing-to-do', summary: withAdvice(`no other client watches ${spec}${ignored}: the image freed itself`) };
  }

  const planned = others.map((w) => planWatcher(f, job, w, f.imageInfo!.headerObject));
  const reasons = planned.flatMap((p) => ('reason' in p ? [p.reason] : []));
  // All or nothing: a refusal for one watcher stops the others too; the image is only usable
  // once every other watcher is gone, and a half-done job hides the real problem.
  if (reasons.length > 0) return refuse(...reasons);
  const steps = planned.flatMap((p) => ('step' in p ? [p.step] : []));
  const parts = steps.map((s) =>
    s.kind === 'enqueue-unmap'
      ? `unmap on node ${s.job.target.node} (${s.job.target.watcher})`
      : `fence ${s.address}${s.node ? ` (node ${s.node})` : s.network ? ` (network ${s.network})` : ''}, undo: \`${s.undo.join(' ')}\``,
  );
  return { kind: 'steps', summary: withAdvice(`release ${spec}: ${parts.join('; ')}`), steps };
}

/**
 * One watcher other than the requester, in the order that is the safety argument: a Ready node
 * gets the node half unless it is contradictory or a pod there uses the image; an address no node
 * or several nodes have is refused, never fenced; the rest (NotReady, out of service, a listed
 * network) is fenced on evidence (planFence).
 */
function planWatcher(f: StaleMappingFacts, job: RbdStaleMappingJob, w: WatcherFact, headerObject: string): WatcherPlan {
  const spec = `${f.pool}/${f.image}`;
  if (w.role === 'ready-node' && w.node?.outOfService) {
    return {
      reason: `node ${w.node.name} (watcher ${w.address} of ${spec}) is Ready yet tainted ${OUT_OF_SERVICE_TAINT}: contradictory, so it is neither fenced nor unmapped there; remove the taint or shut the node down`,
    };
  }
  if (w.role === 'ready-node' && w.node) return planUnmap(f, job, w, w.node.name, headerObject);
  if (w.role === 'unknown-address') {
    const byHand = `ceph osd blocklist add ${w.address} ${f.blocklistExpirySeconds}`;
    const undo = blocklistUndo(w.address).join(' ');
    return {
      reason:
        `watcher ${w.address} of ${spec} is at ${w.ip}, an address no node lists (Node status.addresses) and no RBD_FENCE_CIDRS network contains: ` +
        `it may be an rbd-mirror daemon, a backup host or a VM outside the cluster, so it is not fenced. If it is a stale client, fence it by hand (\`${byHand}\`, undo: \`${undo}\`) or list its network in RBD_FENCE_CIDRS`,
    };
  }
  if (w.role !== 'not-ready-node' && w.role !== 'listed-network') {
    // ambiguous-address (and nothing else reaches here: requester and ready-node are handled above).
    return {
      reason: `watcher ${w.address} of ${spec} is at ${w.ip}, an address of several nodes (${(w.nodesWithAddress ?? []).join(', ')}): which one holds the watch is unknown, so it is neither fenced nor unmapped`,
    };
  }
  return planFence(f, w, headerObject);
}

/** A Ready node's watcher: the node half (an rbd-unmap job for its agent), unless a pod there may still use the image. */
function planUnmap(f: StaleMappingFacts, job: RbdStaleMappingJob, w: WatcherFact, node: string, headerObject: string): WatcherPlan {
  const spec = `${f.pool}/${f.image}`;
  // A real multi-attach: a pod that is (or may be) running on the watcher's node uses the PVC.
  const live = w.podsOnNode.filter((p) => p.phase === undefined || RUNNING.has(p.phase));
  if (live.length > 0) {
    return {
      reason: `real multi-attach: ${live.map((p) => `pod ${p.namespace}/${p.name} (${p.phase ?? 'phase unknown'})`).join(', ')} on node ${node} still uses ${spec} (watcher ${w.address}); not releasing it`,
    };
  }
  if (!f.volume?.claim) return { reason: `no PVC is known for ${spec}, so a pod on node ${node} still using it cannot be ruled out (watcher ${w.address})` };
  const unmap: RbdUnmapJob = {
    version: 1,
    runbook: 'rbd-unmap',
    key: unmapJobKey(job.key, w.address),
    target: { node, pool: f.pool, image: f.image, watcher: w.address },
    claim: f.volume.claim,
    parent: job.key,
    evidence: job.evidence,
  };
  return {
    step: {
      kind: 'enqueue-unmap',
      id: `enqueue-unmap:${node}:${w.address}`,
      description: `ask the agent on node ${node} to unmap ${spec} (watcher ${w.address})`,
      destructive: false,
      job: unmap,
      headerObject,
    },
  };
}

/**
 * A node that is NotReady or out of service, or an address in a listed network: the mapping
 * cannot be released on a node, so the cluster-side answer is fencing the client, on evidence.
 * A pod that the API still shows as Running there is not proof of use when the node stopped
 * posting status (its pods keep their last phase); fence-evidence.ts draws that line.
 */
function planFence(f: StaleMappingFacts, w: WatcherFact, headerObject: string): WatcherPlan {
  const spec = `${f.pool}/${f.image}`;
  const why =
    w.role === 'listed-network'
      ? `${w.ip} is in ${w.network} (RBD_FENCE_CIDRS), no node has it`
      : w.node?.outOfService
        ? `node ${w.node.name} is out of service`
        : `node ${w.node?.name} is not Ready (${w.node?.ready}${w.node?.readySince ? ` since ${w.node.readySince}` : ''})`;
  if (f.blocklisted.includes(w.address)) {
    return { reason: `${w.address} is already blocklisted but still watches ${spec}: wait for the watch to time out or look at the client` };
  }
  if (f.fencing === 'off') {
    const byHand = `ceph osd blocklist add ${w.address} ${f.blocklistExpirySeconds}`;
    return { reason: `${why}; fencing is off: to release ${spec}, run \`${byHand}\` (undo: \`${blocklistUndo(w.address).join(' ')}\`)` };
  }
  const evidence = fenceEvidence(f, w);
  // Unknown means refuse: the engine would refuse this step on the same items; refusing here
  // keeps the job all or nothing (no node half handed over next to a fence that cannot run).
  const problems = planProblems(evidence, f.observedAt);
  if (problems.length > 0) return { reason: `not fencing ${w.address} (watcher of ${spec}): ${problems.join('; ')}` };
  return {
    step: {
      kind: 'blocklist-add',
      id: `blocklist-add:${w.address}`,
      description: `fence ${w.address} (${why}) for ${f.blocklistExpirySeconds} s; undo: ${blocklistUndo(w.address).join(' ')}`,
      destructive: true,
      // `approval`: the engine parks the job before this step until an operator approves it
      // (POST /v1/jobs/:id/approve, with APPROVAL_HIGH_RISK on); `on` fences without asking.
      ...(f.fencing === 'approval' ? { risk: 'high' as const } : {}),
      address: w.address,
      expirySeconds: f.blocklistExpirySeconds,
      pool: f.pool,
      headerObject,
      node: w.node?.name ?? null,
      ...(w.network ? { network: w.network } : {}),
      undo: blocklistUndo(w.address),
      evidence,
    },
  };
}
