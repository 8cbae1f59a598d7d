import type { StepEvidence } from '../../../src/core/catalogue/step-evidence.ts';
import { planProblems } from '../../engine/judge-evidence.ts';
import type { Plan } from '../../engine/runbook.ts';
import type { MapFacts, ResidualFacts } from './facts.ts';
import { intentPath, type IntentRecord } from './intents.ts';
import { cheapEvidence, orphanEvidence, persistenceEvidence, probeEvidence } from './map-evidence.ts';
import { isDeadPath } from './multipath-ll.ts';
import { observationsPath } from './observations.ts';
import type { ResidualPolicy } from './policy.ts';
import type { ResidualStep } from './step.ts';

// plan(facts, policy): which maps are residual (docs/safety.md, issues 5 and 19), with no I/O. A
// map is cleaned only when every item of its evidence is positive (map-evidence.ts); every other
// map is listed with the items that were not. A map with one path that is not dead is healthy
// and is never touched. Disks that an interrupted sequence left behind (its intent record names
// them, their map is gone) are deleted on the same kind of evidence.

type Verdict =
  /** Has a path that is not dead: a working (or recovering) map. */
  | { kind: 'healthy'; why: string }
  /** Every path is dead but an interlock holds it: a human must look. */
  | { kind: 'held'; reasons: string[] }
  | { kind: 'residual'; releaseQueuedIo: boolean };

interface Assessment {
  map: string;
  wwid: string;
  dm: string | null;
  paths: string[];
  verdict: Verdict;
  /** What the verdict stood on (empty for a healthy map). */
  evidence: StepEvidence[];
}

export type ResidualPlan = Plan<ResidualStep> & { assessments: Assessment[]; notes: string[] };

/** The state directory the plan names in evidence sources and intent records (the agent's STATE_DIR). */
export interface PlanContext {
  stateDir: string;
}

const devList = (m: MapFacts): string[] => m.paths.map((p) => p.dev).filter((d): d is string => d !== null);
const pathText = (m: MapFacts): string =>
  m.paths.map((p) => `${p.dev ?? '-'} ${p.dmState} ${p.checkerState}${p.onlineState ? ` ${p.onlineState}` : ''}`).join(', ');
const reasonsOf = (items: readonly StepEvidence[], f: ResidualFacts): string[] => planProblems(items, f.observedAt);

/** Every evidence item of a map whose paths are all dead (empty reasons: it is residual). */
function mapEvidence(m: MapFacts, f: ResidualFacts, policy: ResidualPolicy): StepEvidence[] {
  return [...cheapEvidence(m, f, policy), ...probeEvidence(m, f, policy)];
}

/** Queued I/O to release: the map queues (queue_if_no_path) or something still has it open. */
const needsRelease = (m: MapFacts): boolean => m.queueIfNoPath || (m.openCount ?? 0) > 0;

function assess(m: MapFacts, f: ResidualFacts, policy: ResidualPolicy): { verdict: Verdict; evidence: StepEvidence[] } {
  const live = m.paths.filter((p) => !isDeadPath(p));
  if (live.length > 0 || m.paths.length === 0) {
    return {
      verdict: {
        kind: 'healthy',
        why: m.paths.length ? `${live.length} of ${m.paths.length} path(s) not dead: ${pathText(m)}` : 'no paths listed',
      },
      evidence: [],
    };
  }
  const evidence = mapEvidence(m, f, policy);
  const reasons = reasonsOf(evidence, f);
  const release = needsRelease(m);
  if (reasons.length === 0 && release && policy.releaseQueuedIo === 'require-approval') {
    reasons.push(`releasing its queued I/O (dmsetup message ${m.name} 0 fail_if_no_path) is needed and requires approval by policy`);
  }
  return { verdict: reasons.length ? { kind: 'held', reasons } : { kind: 'residual', releaseQueuedIo: release }, evidence };
}

function intentOf(m: MapFacts, f: ResidualFacts, jobId: string): IntentRecord {
  return {
    version: 1,
    jobId,
    map: m.name,
    wwid: m.wwid,
    dm: m.dm as string,
    disks: m.paths.filter((p) => p.dev !== null).map((p) => ({ name: p.dev as string, hctl: p.hctl, wwid: m.wwid })),
    createdAt: f.observedAt,
    bootId: f.bootId,
    done: [],
  };
}

function stepsFor(
  m: MapFacts,
  f: ResidualFacts,
  releaseQueuedIo: boolean,
  evidence: StepEvidence[],
  policy: ResidualPolicy,
  ctx: PlanContext,
  jobId: string,
): ResidualStep[] {
  const dm = m.dm as string;
  const steps: ResidualStep[] = [];
  const record = intentOf(m, f, jobId);
  steps.push({
    kind: 'record-intent',
    id: `record-intent:${m.wwid}`,
    description: `write the intent record ${intentPath(ctx.stateDir, m.wwid)} (${m.name}, ${dm}, disks ${record.disks.map((d) => `${d.name} ${d.hctl ?? '?'}`).join(', ') || 'none'})`,
    destructive: false,
    record,
  });
  if (releaseQueuedIo) {
    const stuck = m.openers.map((o) => `${o.pid} (${o.comm})`).join(', ');
    steps.push({
      kind: 'release-queued-io',
      id: `release-queued-io:${m.wwid}`,
      description: `dmsetup message ${m.name} 0 fail_if_no_path: fail the I/O queued on ${dm} so stuck openers let go${stuck ? ` (${stuck})` : ''}`,
      destructive: true,
      highRisk: true,
      map: m.name,
      wwid: m.wwid,
      dm,
      evidence: [...evidence, persistenceEvidence(m, f, policy, observationsPath(ctx.stateDir))],
    });
  }
  steps.push({
    kind: 'flush-map',
    id: `flush-map:${m.wwid}`,
    description: `multipath -f ${m.name} (${dm}, WWID ${m.wwid}) once its open count is 0`,
    destructive: true,
    map: m.name,
    wwid: m.wwid,
    dm,
    paths: devList(m),
    links: m.byIdLinks,
    evidence,
  });
  for (const p of m.paths) {
    if (!p.dev) continue;
    steps.push({
      kind: 'delete-disk',
      id: `delete-disk:${p.dev}:${p.hctl ?? 'unknown'}:${m.wwid}`,
      description: `echo 1 > /sys/block/${p.dev}/device/delete (${p.hctl ?? 'no H:C:T:L'}, a dead path of ${m.name})`,
      destructive: true,
      disk: p.dev,
      hctl: p.hctl,
      wwid: m.wwid,
      map: m.name,
      evidence: [
        ...evidence,
        {
          claim: `${p.dev} is ${p.hctl ?? '?'} with WWID ${p.sysfsWwid ?? m.wwid}, a path of ${m.name}`,
          source: `/sys/block/${p.dev}/device`,
          observedAt: f.observedAt,
          status: p.sysfsWwid === null && p.hctl === null ? 'missing' : 'holds',
        },
      ],
    });
  }
  steps.push(closeIntent(m.wwid, m.name, ctx, `${m.name} and its disks are gone`));
  return steps;
}

function closeIntent(wwid: string, map: string, _ctx: PlanContext, why: string): ResidualStep {
  return {
    kind: 'close-intent',
    id: `close-intent:${wwid}`,
    description: `remove the intent record of ${map} (${why})`,
    destructive: false,
    wwid,
  };
}

/** What to do about intent records whose map is gone: finish deleting their disks, or forget them. */
function planIntents(f: ResidualFacts, policy: ResidualPolicy, ctx: PlanContext, notes: string[], held: string[]): ResidualStep[] {
  const steps: ResidualStep[] = [];
  for (const i of f.intents) {
    const r = i.record;
    if (i.mapPresent) continue; // the map itself is assessed like any other
    const path = intentPath(ctx.stateDir, r.wwid);
    const sameBoot = r.bootId !== null && r.bootId === f.bootId;
    if (!sameBoot) {
      // After a reboot the kernel found its disks anew: what is there now is assessed as maps.
      notes.push(
        `intent record of ${r.map} (WWID ${r.wwid}) is from an earlier boot (${r.bootId ?? 'unknown'}): forgotten, its disks (if any came back) are judged as maps`,
      );
      steps.push(closeIntent(r.wwid, r.map, ctx, 'from an earlier boot'));
      continue;
    }
    const orphanSteps: ResidualStep[] = [];
    const blocked: string[] = [];
    for (const d of i.orphans) {
      const evidence = orphanEvidence(r, d, f, policy, path);
      const problems = reasonsOf(evidence, f);
      if (problems.length) {
        blocked.push(`${d.name}: ${problems.join('; ')}`);
        continue;
      }
      orphanSteps.push({
        kind: 'delete-disk',
        id: `delete-disk:${d.name}:${d.hctl ?? 'unknown'}:${r.wwid}`,
        description: `echo 1 > /sys/block/${d.name}/device/delete (${d.hctl ?? 'no H:C:T:L'}, left behind when job ${r.jobId} was interrupted after ${r.map} was flushed)`,
        destructive: true,
        disk: d.name,
        hctl: d.hctl,
        wwid: r.wwid,
        map: r.map,
        evidence,
      });
    }
    if (blocked.length) {
      held.push(`orphan disk(s) of ${r.map} (WWID ${r.wwid}, intent record of job ${r.jobId}) left alone: ${blocked.join(' | ')}`);
      continue;
    }
    steps.push(...orphanSteps, closeIntent(r.wwid, r.map, ctx, orphanSteps.length ? `its orphan disks are deleted` : `${r.map} and its disks are gone`));
  }
  return steps;
}

const describe = (a: Assessment): string => {
  switch (a.verdict.kind) {
    case 'healthy':
      return `${a.map} (${a.dm ?? '?'}) left alone: healthy, ${a.verdict.why}`;
    case 'held':
      return `${a.map} (${a.dm ?? '?'}) left alone although every path is dead: ${a.verdict.reasons.join('; ')}`;
    case 'residual':
      return `${a.map} (${a.dm ?? '?'}) is residual`;
    default: {
      const never: never = a.verdict;
      return never;
    }
  }
};

export function plan(f: ResidualFacts, policy: ResidualPolicy, ctx: PlanContext = { stateDir: '/var/lib/volume-medic' }, jobId = 'unknown'): ResidualPlan {
  const notes: string[] = [...f.observeNotes];
  const refuse = (...reasons: string[]): ResidualPlan => ({ kind: 'refuse', reasons, assessments: [], notes });
  if (f.ranOn !== f.node) return refuse(`the job is for node ${f.node} but ran on ${f.ranOn}`);
  if (f.unreadableIntents.length) {
    return refuse(
      `intent record(s) of an earlier cleanup cannot be read (${f.unreadableIntents.join(', ')}): a human must look at them before anything else is removed`,
    );
  }
  if (!f.listing.ok) {
    if (/sysfs shows no multipath map/.test(f.listing.why) && f.maps.length === 0 && f.intents.length === 0) {
      return { kind: 'nothing-to-do', summary: `no multipath maps on ${f.node} (${f.listing.why})`, assessments: [], notes };
    }
    return refuse(`cannot list multipath maps: ${f.listing.why}`);
  }
  if (f.unreadableMountinfo.length) notes.push(`mountinfo of ${f.unreadableMountinfo.length} process(es) could not be read (exited while we looked?)`);

  const assessments: Assessment[] = f.maps.map((m) => {
    const a = assess(m, f, policy);
    return { map: m.name, wwid: m.wwid, dm: m.dm, paths: devList(m), verdict: a.verdict, evidence: a.evidence };
  });
  const residual = f.maps.filter((_, i) => assessments[i]?.verdict.kind === 'residual');
  const leftAlone = assessments.filter((a) => a.verdict.kind !== 'residual');
  const held = leftAlone.filter((a) => a.verdict.kind === 'held').map(describe);
  const stuck = f.maps.flatMap((m) => m.probe.stuckPids.map((pid) => `${pid} (probe of ${m.dm})`));
  if (stuck.length) notes.push(`probe processes stuck in D state after SIGKILL: ${stuck.join(', ')}`);
  const intentSteps = planIntents(f, policy, ctx, notes, held);
  // A present map whose intent record remains but which is no longer residual: the record is ours to forget.
  for (const i of f.intents) {
    if (!i.mapPresent) continue;
    const a = assessments.find((x) => x.wwid === i.record.wwid);
    if (a?.verdict.kind === 'healthy') intentSteps.push(closeIntent(i.record.wwid, i.record.map, ctx, `${i.record.map} is healthy again`));
    else if (!a) notes.push(`intent record of ${i.record.map} (WWID ${i.record.wwid}): its map is present but multipath -ll does not list it; record kept`);
  }
  const tail = [...leftAlone.filter((a) => a.verdict.kind === 'healthy').map(describe), ...held, ...notes].join('; ');

  if (residual.length > policy.maxMapsPerJob) {
    return {
      kind: 'refuse',
      reasons: [
        `${residual.length} maps look residual (${residual.map((m) => m.name).join(', ')}), more than the ${policy.maxMapsPerJob} one job may remove: a human must confirm this is not a storage outage`,
      ],
      assessments,
      notes,
    };
  }
  const steps = [
    ...intentSteps,
    ...residual.flatMap((m) => {
      const a = assessments.find((x) => x.wwid === m.wwid);
      return stepsFor(m, f, a?.verdict.kind === 'residual' && a.verdict.releaseQueuedIo, a?.evidence ?? [], policy, ctx, jobId);
    }),
  ];
  if (steps.length === 0) {
    if (held.length > 0) return { kind: 'refuse', reasons: held, assessments, notes };
    return {
      kind: 'nothing-to-do',
      summary: f.maps.length ? `no residual multipath maps: ${tail}` : 'no multipath maps',
      assessments,
      notes,
    };
  }
  const cleaned = residual.map((m) => `${m.name} (${m.dm}, ${devList(m).join('+') || 'no disks'})`);
  const orphans = intentSteps.filter((s) => s.kind === 'delete-disk').map((s) => (s.kind === 'delete-disk' ? s.disk : ''));
  const parts = [
    cleaned.length ? `remove residual map(s) ${cleaned.join(', ')}` : '',
    orphans.length ? `delete disk(s) ${orphans.join(', ')} left behind by an interrupted cleanup` : '',
    !cleaned.length && !orphans.length ? 'forget finished intent record(s)' : '',
  ].filter(Boolean);
  return { kind: 'steps', summary: `${parts.join('; ')}${tail ? `; ${tail}` : ''}`, steps, assessments, notes };
}
