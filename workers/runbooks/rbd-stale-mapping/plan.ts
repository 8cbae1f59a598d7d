import { idempotencyKey } from '../../../src/catalogue/keys.ts';
import type { RbdStaleMappingJob, RbdUnmapJob } from '../../../src/catalogue/jobs.ts';
import type { Plan } from '../../engine/runbook.ts';
import type { StaleMappingFacts } from './facts.ts';
import type { StaleMappingStep } from './step.ts';

// plan(facts) -> steps or a refusal, no I/O. Order of questions: does the image exist, who
// watches it, is any of them a real second user (refuse), then per watcher: a Ready node gets the
// node half, a gone/unknown one is fenced (by policy).

const RUNNING = new Set(['Running', 'Pending', 'Unknown']);

/** The node half's key: the parent's key and the watcher, so a repeat of either folds. */
export function unmapJobKey(parentKey: string, watcher: string): string {
  return idempotencyKey('rbdunmap', [parentKey, watcher]);
}

export const blocklistUndo = (address: string): string[] => ['ceph', 'osd', 'blocklist', 'rm', address];

export function plan(f: StaleMappingFacts, job: RbdStaleMappingJob): Plan<StaleMappingStep> {
  const spec = `${f.pool}/${f.image}`;
  const withAdvice = (text: string): string => (f.advice ? `${text}. Prevention: ${f.advice}` : text);
  const refuse = (...reasons: string[]): Plan<StaleMappingStep> => ({ kind: 'refuse', reasons: f.advice ? [...reasons, `prevention: ${f.advice}`] : reasons });

  if (!f.imageInfo) return refuse(`rbd image ${spec} does not exist (${f.imageError ?? 'rbd info failed'}): nothing to release`);
  if (f.unparsedWatchers.length > 0) {
    return refuse(`watchers of ${spec} that cannot be read: ${f.unparsedWatchers.join(' | ')}; not acting on a listing we do not understand`);
  }
  const others = f.watchers.filter((w) => w.role !== 'requester');
  if (others.length === 0) {
    const ignored = f.watchers.length > 0 ? ` (only the requesting node ${f.requester.node ?? ''} watches it)` : '';
    return { kind: 'nothing-to-do', summary: withAdvice(`no other client watches ${spec}${ignored}: the image freed itself`) };
  }

  const reasons: string[] = [];
  const steps: StaleMappingStep[] = [];
  for (const w of others) {
    if (w.role === 'ready-node' && w.node) {
      // A real multi-attach: a pod that is (or may be) running on the watcher's node uses the PVC.
      const live = w.podsOnNode.filter((p) => p.phase === undefined || RUNNING.has(p.phase));
      if (live.length > 0) {
        reasons.push(`real multi-attach: ${live.map((p) => `pod ${p.namespace}/${p.name} (${p.phase ?? 'phase unknown'})`).join(', ')} on node ${w.node.name} still uses ${spec} (watcher ${w.address}); not releasing it`);
        continue;
      }
      if (!f.volume?.claim) {
        reasons.push(`no PVC is known for ${spec}, so a pod on node ${w.node.name} still using it cannot be ruled out (watcher ${w.address})`);
        continue;
      }
      const unmap: RbdUnmapJob = {
        version: 1,
        runbook: 'rbd-unmap',
        key: unmapJobKey(job.key, w.address),
        target: { node: w.node.name, pool: f.pool, image: f.image, watcher: w.address },
        claim: f.volume.claim,
        parent: job.key,
        evidence: job.evidence,
      };
      steps.push({
        kind: 'enqueue-unmap',
        id: `enqueue-unmap:${w.node.name}:${w.address}`,
        description: `ask the agent on node ${w.node.name} to unmap ${spec} (watcher ${w.address})`,
        destructive: false,
        job: unmap,
        headerObject: f.imageInfo.headerObject,
      });
      continue;
    }
    // NotReady, Unknown, or an address no node has: the mapping cannot be released on the node,
    // so the safe, cluster-side answer is fencing the client. A pod that the API still shows as
    // Running there is not proof of use: a NotReady node's pods keep their last phase.
    const why = w.role === 'unknown-address' ? `no node has address ${w.ip}` : `node ${w.node?.name} is not Ready (${w.node?.ready})`;
    const byHand = `ceph osd blocklist add ${w.address} ${f.blocklistExpirySeconds}`;
    if (f.blocklisted.includes(w.address)) {
      reasons.push(`${w.address} is already blocklisted but still watches ${spec}: wait for the watch to time out or look at the client`);
      continue;
    }
    if (f.fencing === 'off') {
      reasons.push(`${why}; fencing is off: to release ${spec}, run \`${byHand}\` (undo: \`${blocklistUndo(w.address).join(' ')}\`)`);
      continue;
    }
    steps.push({
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
      headerObject: f.imageInfo.headerObject,
      node: w.node?.name ?? null,
      undo: blocklistUndo(w.address),
    });
  }
  // All or nothing: a refusal for one watcher stops the others too; the image is only usable
  // once every other watcher is gone, and a half-done job hides the real problem.
  if (reasons.length > 0) return refuse(...reasons);

  const parts = steps.map((s) =>
    s.kind === 'enqueue-unmap' ? `unmap on node ${s.job.target.node} (${s.job.target.watcher})` : `fence ${s.address}${s.node ? ` (node ${s.node})` : ''}, undo: \`${s.undo.join(' ')}\``);
  return { kind: 'steps', summary: withAdvice(`release ${spec}: ${parts.join('; ')}`), steps };
}
