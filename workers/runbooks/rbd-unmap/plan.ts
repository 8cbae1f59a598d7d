import { planProblems } from '../../engine/judge-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import { classify, describeHolder, podUidOfKubeletPath, type ClassifyContext } from './classify.ts';
import type { UnmapFacts } from './facts.ts';
import type { UnmapStep } from './step.ts';
import { deviceEvidence, leftoverEvidence, staleMountEvidence } from './unmap-evidence.ts';

// plan(facts) -> steps or a refusal, no I/O. Refuses on: the wrong node, a pod here that still
// uses the PVC (real multi-attach), anything live or foreign holding the device, kernel
// holders, and leftovers when force is not allowed. Otherwise: unmount the stale kubelet
// mounts (pod mounts before the global mount they sit on), then unmap. Every step carries the
// evidence it stands on (unmap-evidence.ts); evidence that cannot be shown refuses the plan.

// long because: one decision tree whose order is the safety argument (each branch a refusal naming its reason); split, the order would be spread over files
export function plan(f: UnmapFacts): Plan<UnmapStep> {
  const spec = `${f.pool}/${f.image}`;
  const refuse = (...reasons: string[]): Plan<UnmapStep> => ({ kind: 'refuse', reasons });
  if (f.ranOn !== f.node) return refuse(`the job is for node ${f.node} but ran on ${f.ranOn}`);
  if (f.mapped.length === 0) {
    const link = f.byPoolLink ? ` (but /dev/rbd/${spec} still points at ${f.byPoolLink}: a leftover udev link)` : '';
    return { kind: 'nothing-to-do', summary: `${spec} is not mapped on node ${f.node}: nothing to release here${link}` };
  }
  if (f.claimUsersHere.length > 0) {
    return refuse(
      `real multi-attach: ${f.claimUsersHere.map((p) => `pod ${p.namespace}/${p.name} (${p.phase ?? 'phase unknown'})`).join(', ')} on node ${f.node} still uses ${spec}; not unmapping it`,
    );
  }

  const ctx: ClassifyContext = { kubeletRoot: f.policy.kubeletRoot, runningPodUids: f.runningPodUids, claimInUseHere: false };
  const reasons: string[] = [];
  const steps: UnmapStep[] = [];
  for (const m of f.mapped) {
    const dev = `/dev/${m.device}`;
    if (m.holders.kernel.length > 0) reasons.push(`${dev} is held by kernel devices ${m.holders.kernel.join(', ')} (dm/md on top of it): not unmapping`);
    const c = classify(m.holders, ctx);
    const all = [...c.mounts, ...c.openers];
    const blocking = all.filter((h) => h.class === 'live' || h.class === 'foreign');
    if (blocking.length > 0) reasons.push(`${dev} is in use: ${blocking.map(describeHolder).join('; ')}`);
    const leftovers = all.filter((h) => h.class === 'leftover');
    if (leftovers.length > 0 && f.policy.force !== 'no-live-workload') {
      reasons.push(
        `${dev} is held by what pods that no longer run here left behind (${leftovers.map(describeHolder).join('; ')}); a forced unmap is not allowed by policy`,
      );
    }
    // Pod volume mounts (bind mounts of the staging mount) before the global staging mount,
    // which is the order kubelet tears them down in; within each, a nested mount before its base.
    const evidence = deviceEvidence(f, m, c);
    // Unknown means refuse: the engine would refuse the steps on these same items.
    const problems = planProblems(evidence, f.observedAt);
    if (problems.length > 0) reasons.push(`not touching ${dev}: ${problems.join('; ')}`);
    const isPodMount = (p: string): number => (podUidOfKubeletPath(ctx.kubeletRoot, p) === null ? 1 : 0);
    const stale = c.mounts
      .filter((x) => x.host && x.class === 'stale')
      .sort((a, b) => isPodMount(a.mountPoint) - isPodMount(b.mountPoint) || b.mountPoint.length - a.mountPoint.length);
    for (const s of [...new Map(stale.map((x) => [x.mountPoint, x])).values()]) {
      steps.push({
        kind: 'umount',
        id: `umount:${m.device}:${s.mountPoint}`,
        description: `unmount the stale kubelet mount ${s.mountPoint} of ${dev}`,
        destructive: true,
        device: m.device,
        majorMinor: m.majorMinor,
        mountPoint: s.mountPoint,
        evidence: [...evidence, staleMountEvidence(f, m, s, podUidOfKubeletPath(ctx.kubeletRoot, s.mountPoint))],
      });
    }
    steps.push({
      kind: 'unmap',
      id: `unmap:${m.device}:${spec}`,
      description: `rbd unmap ${dev} (${spec}${m.clientAddr ? `, client ${m.clientAddr}` : ''})${leftovers.length > 0 ? '; forced if still busy (leftovers only, allowed by policy)' : ''}`,
      destructive: true,
      device: m.device,
      pool: f.pool,
      image: f.image,
      majorMinor: m.majorMinor,
      forceAllowed: f.policy.force === 'no-live-workload',
      // A forced unmap drops whatever I/O the leftovers still had queued: high risk, so the engine
      // holds the step for approval (APPROVAL_HIGH_RISK). A plain unmap is not.
      ...(f.policy.force === 'no-live-workload' && leftovers.length > 0 ? { risk: 'high' as const } : {}),
      context: ctx,
      evidence: leftovers.length > 0 ? [...evidence, leftoverEvidence(f, m, leftovers.map(describeHolder))] : evidence,
    });
  }
  if (reasons.length > 0) return refuse(...reasons);

  const notes: string[] = [];
  for (const m of f.mapped) {
    if (m.clientAddr && m.clientAddr !== f.watcher)
      notes.push(`${m.device} belongs to client ${m.clientAddr}, not the watcher ${f.watcher}: the watch may come from another process (rbd-nbd?)`);
  }
  const umounts = steps.filter((s) => s.kind === 'umount').length;
  return {
    kind: 'steps',
    summary: `unmap ${spec} on node ${f.node} (${f.mapped.map((m) => m.device).join(', ')})${umounts ? ` after unmounting ${umounts} stale kubelet mount(s)` : ''}${notes.length ? `; ${notes.join('; ')}` : ''}`,
    steps,
  };
}
