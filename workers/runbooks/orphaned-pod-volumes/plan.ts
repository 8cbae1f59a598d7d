import { posix } from 'node:path';
import type { Plan } from '../../engine/runbook.ts';
import type { OrphanFacts, UidFacts } from './facts.ts';
import { persistenceClaim, uidClaims, unstagedClaim } from './orphan-evidence.ts';
import type { OrphanStep } from './step.ts';
import { stagingPaths, volDataVolume, CSI_DIR } from './vol-data.ts';

// plan(facts): pure. Refuses the whole job on the wrong node, an unknown kubelet root, or kubelet
// not running. Then per pod directory: any claim of orphan-evidence.ts that does not hold leaves
// the UID alone with its reasons; a volume still staged (or whose staging cannot be told) keeps
// that volume's directory and its vol_data.json while the rest of the UID goes. The job refuses
// only when no UID is cleanable and at least one is held (one held UID does not stop the others).
// A scan job skips the UIDs the API server or the runtime knows: they are pods, not orphans.

const depth = (rel: string): number => (rel === '' ? 0 : rel.split('/').length);

type UidPlan = { kind: 'held'; reasons: string[] } | { kind: 'steps'; steps: OrphanStep[]; kept: string[]; mature: boolean };

function isMature(f: OrphanFacts, u: UidFacts): boolean {
  return u.sighting !== null && u.sighting.samples >= 2 && Date.parse(f.observedAt) - Date.parse(u.sighting.since) >= f.minAgeMs;
}

function planUid(f: OrphanFacts, u: UidFacts, podsDev: string): UidPlan {
  const claims = uidClaims(f, u);
  const reasons = claims.flatMap((c) => (c.reason ? [`pods/${u.uid}: ${c.reason}`] : []));
  const evidence = [...claims.map((c) => c.evidence), persistenceClaim(f, u).evidence];
  if (reasons.length > 0 || !u.tree.known) return { kind: 'held', reasons };

  const where = (rel: string) => ({ uid: u.uid, podDir: u.dir, podsDir: f.podsDir, rel, path: rel === '' ? u.dir : posix.join(u.dir, rel), podsDev });
  const kept: string[] = [];
  const steps: OrphanStep[] = [];
  for (const v of u.volData) {
    const staged = unstagedClaim(f, v);
    if (staged.reason) {
      kept.push(`${CSI_DIR}/${v.volume}`);
      continue;
    }
    steps.push({
      kind: 'unlink-vol-data',
      id: `unlink-vol-data:${u.uid}:${v.volume}`,
      description: `unlink kubelet's metadata ${posix.join(u.dir, v.rel)} of volume ${v.volume}, staged nowhere on ${f.node}`,
      destructive: true,
      ...where(v.rel),
      node: f.node,
      volume: v.volume,
      pv: v.parsed?.specVolID ?? v.volume,
      stagingPaths: v.parsed ? stagingPaths(f.kubeletRoot, v.parsed) : [],
      evidence: [...evidence, staged.evidence],
    });
  }
  const keptOrAbove = (rel: string): boolean => kept.some((k) => rel === k || rel.startsWith(`${k}/`) || k.startsWith(rel === '' ? '' : `${rel}/`));
  const entries = u.tree.value;
  for (const e of entries) {
    if (e.type !== 'file' || volDataVolume(e.rel) !== null || keptOrAbove(e.rel)) continue;
    steps.push({
      kind: 'unlink-kubelet-file',
      id: `unlink-kubelet-file:${u.uid}:${e.rel}`,
      description: `unlink kubelet's file ${posix.join(u.dir, e.rel)}`,
      destructive: true,
      ...where(e.rel),
      evidence,
    });
  }
  const dirs = entries.filter((e) => e.type === 'dir' && !keptOrAbove(e.rel)).sort((a, b) => depth(b.rel) - depth(a.rel) || (a.rel < b.rel ? 1 : -1));
  for (const d of dirs) {
    steps.push({
      kind: 'rmdir',
      id: `rmdir:${u.uid}:${d.rel || '.'}`,
      description: `rmdir ${d.rel === '' ? u.dir : posix.join(u.dir, d.rel)}`,
      destructive: true,
      ...where(d.rel),
      evidence,
    });
  }
  return { kind: 'steps', steps, kept, mature: isMature(f, u) };
}

export function plan(f: OrphanFacts): Plan<OrphanStep> {
  const refuse = (...reasons: string[]): Plan<OrphanStep> => ({ kind: 'refuse', reasons });
  if (f.ranOn !== f.node) return refuse(`the job is for node ${f.node} but ran on ${f.ranOn}`);
  if (!f.podsDev.known) return refuse(`kubelet-root-unknown: ${f.podsDev.why} (KUBELET_ROOT_DIR is ${f.kubeletRoot})`);
  if (!f.kubeletActive.known) return refuse(`kubelet-not-running: unknown (${f.kubeletActive.why})`);
  if (!f.kubeletActive.value)
    return refuse(`kubelet-not-running: systemctl is-active kubelet is not active on ${f.node}; kubelet may be about to reconstruct its pods' volumes`);

  // A scan job looks at every directory in pods/: those of pods the API server or the runtime knows are not orphans.
  const scan = f.requestedUid === undefined;
  const isPod = (u: UidFacts): boolean => (u.apiPod.known && u.apiPod.value !== null) || (u.inRuntime.known && u.inRuntime.value);
  const candidates = scan ? f.candidates.filter((u) => !isPod(u)) : f.candidates;
  if (candidates.length === 0) {
    return {
      kind: 'nothing-to-do',
      summary: scan ? `no orphaned pod directory in ${f.podsDir} on ${f.node}` : `${f.podsDir}/${f.requestedUid} is gone already`,
    };
  }
  const held: string[] = [];
  const mature: OrphanStep[] = [];
  const young: OrphanStep[] = [];
  const notes: string[] = [];
  for (const u of candidates) {
    const p = planUid(f, u, f.podsDev.value);
    if (p.kind === 'held') held.push(...p.reasons);
    else {
      (p.mature ? mature : young).push(...p.steps);
      if (p.kept.length) notes.push(`pods/${u.uid}: volume-still-staged: ${p.kept.join(', ')} left for kubelet to unstage`);
    }
  }
  const steps = [...mature, ...young];
  if (steps.length === 0) return refuse(...held);
  const uids = new Set(steps.map((s) => s.uid));
  return {
    kind: 'steps',
    summary: [
      `remove what is left of ${uids.size} orphaned pod(s) on ${f.node}: ${[...uids].join(', ')}`,
      ...notes,
      ...held.map((h) => `left alone: ${h}`),
    ].join('; '),
    steps,
  };
}
