import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { percentile } from '../lib/stats.ts';
import { effectCounts } from './effects.ts';
import { inject, planFaults, type FaultRecord } from './faults.ts';
import { buckets, recoveries, type Recovery } from './latency.ts';
import { Load, type LoadShape } from './load.ts';
import { heapLives, peakBefore, RssSampler, samplesRecord, slopes, type Slope } from './memory.ts';
import { soakSvg } from './plot.ts';
import { StoreCheck } from './store-check.ts';
import { startTopology, PREFIX, type SoakShape } from './topology.ts';
import { Tracker } from './tracker.ts';

/** How much a process may grow over a short run (under 20 minutes of samples): runaway growth, not a slope. */
const SHORT_RUN_GROWTH = 2;
/** How far a simulated fleet process's RSS may rise over its peak before the fit, in a long run (run.ts says why). */
const FLEET_PEAK_GROWTH = 1.5;

// One soak: the topology up, the load on, the fault schedule played, then the load stopped and
// every accepted job waited for; the invariants checked, the report written. Returns the summary
// with `failures` (empty when every invariant held).

export interface SoakOptions extends SoakShape {
  minutes: number;
  outDir: string;
  load: Omit<LoadShape, 'agents' | 'realAgents'>;
  /** The bound on each volume-medic process's RSS slope (MiB/h) after the warm-up. */
  rssBoundMiBPerHour: number;
  /** The bound on each simulated fleet process's live-heap slope (MiB/h) after the warm-up. */
  heapBoundMiBPerHour: number;
  /** The bound on each fault's recovery (ms). */
  recoveryBoundMs: number;
  /** Every accepted job must have finished this long after the load stopped (ms). */
  stuckBoundMs: number;
}

/** Processes whose memory is volume-medic's own: the bound applies to them (Redis keeps every job for the deduplication window by design; the API fake records every request). */
const OURS = /^(receiver|fleet|real-agent)-/;

// long because: the soak's phases in order (start, load, faults, drain, checks, report), each a few lines
export async function runSoak(o: SoakOptions): Promise<Record<string, unknown> & { failures: string[] }> {
  const t00 = Date.now();
  const log = (line: string): void => console.log(`[soak +${Math.round((Date.now() - t00) / 1000)}s] ${line}`);
  const t = await startTopology(o, log);
  const tracker = new Tracker();
  const reader = setInterval(() => {
    for (const c of t.fleet) tracker.read(c, 'fleet');
    for (const { child } of t.realLives) tracker.read(child, 'real');
  }, 250);
  const sampler = new RssSampler(() => [...t.processes(), { name: 'harness', pid: process.pid }]);
  sampler.start(5_000);
  const hashKey = (id: string): string => `${PREFIX}:${tracker.jobs.get(id)!.queue}:${id}`;
  const store = new StoreCheck(tracker, () => t.sentinel.primaryPort(), hashKey);
  store.start(10_000, 120_000);
  const failures: string[] = [];
  const faults: FaultRecord[] = [];
  const runMs = o.minutes * 60_000;
  const long = o.minutes >= 20;
  const warmupMs = long ? 120_000 : 40_000;
  const plan = planFaults(runMs, warmupMs, long ? 120_000 : 30_000, long ? 120_000 : 30_000, 60_000);
  log(`fault schedule: ${plan.map((f) => `${f.kind}@${Math.round(f.at / 1000)}s${f.lastsMs ? `(${Math.round(f.lastsMs / 1000)}s)` : ''}`).join(' ')}`);

  const load = new Load(t.balancer.url, { ...o.load, agents: o.agents, realAgents: o.realAgents }, tracker);
  const t0 = Date.now();
  load.start();
  const progress = setInterval(() => {
    const js = [...tracker.jobs.values()];
    const late = js.filter((j) => j.ran.length === 0 && Date.now() - j.acceptedAt > o.stuckBoundMs).length;
    log(
      `sent ${load.stats.sent}, 202 ${load.stats.accepted}, jobs ${js.length}, started ${js.filter((j) => j.ran.length > 0).length}, finished ${js.filter((j) => j.finishedAt).length}, not started after ${o.stuckBoundMs / 1000} s: ${late}`,
    );
  }, 30_000);
  try {
    for (const [round, f] of plan.entries()) {
      const wait = t0 + f.at - Date.now();
      if (wait > 0) await sleep(wait);
      log(`fault ${f.kind}...`);
      const rec = await inject(t, f, Math.floor(round / 7)).catch((err: Error) => {
        failures.push(`fault ${f.kind} could not be injected: ${err.message}`);
        return undefined;
      });
      if (rec) {
        faults.push(rec);
        log(`fault ${f.kind}: ${rec.detail} (${rec.end - rec.start} ms)`);
      }
    }
    const left = t0 + runMs - Date.now();
    if (left > 0) await sleep(left);
  } finally {
    clearInterval(progress);
  }
  log('load stopping; waiting for every notification to be answered');
  await load.stop();
  const loadEnd = Date.now();
  log(`load stopped: ${load.stats.sent} notifications, ${load.stats.accepted} answered 202; waiting for every job to finish`);
  const allDone = (): boolean => [...tracker.jobs.values()].every((j) => j.finishedAt !== undefined);
  while (!allDone() && Date.now() - loadEnd < o.stuckBoundMs) await sleep(500);
  // Two lock durations more: a job a fault left active must not run a second time.
  await sleep(5_000);
  clearInterval(reader);
  for (const c of t.fleet) tracker.read(c, 'fleet');
  for (const { child } of t.realLives) tracker.read(child, 'real');
  sampler.stop();
  store.stop();
  // The jobs younger than two minutes, and any reason not read yet (two rounds: a job missing once is asked again).
  await store.round(0);
  await sleep(1_000);
  await store.round(0);

  // Every job answered 202 was in the store (StoreCheck: two minutes after its 202, inside the window finished jobs are kept).
  const jobs = [...tracker.jobs.entries()];
  const neverRan = jobs.filter(([, j]) => j.ran.length === 0);
  const admin = new Redis({ port: await t.sentinel.primaryPort(), host: '127.0.0.1', maxRetriesPerRequest: 2 });
  const lost = [...store.missing];
  const stuck = jobs.filter(([, j]) => j.finishedAt === undefined).map(([id]) => id);
  const failed = jobs.filter(([, j]) => j.outcome === 'failed').map(([id]) => id);
  const failedReasons = failed.map((id) => ({ id, reason: store.reasons.get(id) ?? '' }));
  // A simulated job started twice is doubled, unless its webhook was answered something else
  // before its 202: that attempt may have stored the job where a failover then discarded it after
  // it ran, and the retry stored it again (at least once for what was never acknowledged; the
  // real agents' journals show that no destructive step repeats then).
  const fleetDoubled = jobs.filter(([, j]) => !j.real && j.ran.length > 1 && j.before.length === 0).map(([id, j]) => `${id} ran ${j.ran.length}x`);
  const fleetRetriedTwice = jobs.filter(([, j]) => !j.real && j.ran.length > 1 && j.before.length > 0).length;
  const effects = effectCounts(Array.from({ length: o.realAgents }, (_, i) => t.hostRoot(i)));
  const stepsDoubled = [...effects].filter(([, n]) => n > 1).map(([step, n]) => `${step} took effect ${n}x`);
  const realJobs = jobs.filter(([, j]) => j.real);
  // Started more than once: after a kill, a parked wait (the API answering 503) or a lost completion.
  const realStartedAgain = realJobs.filter(([, j]) => j.ran.length > 1).length;
  // Each job a kill interrupted mid-step: finished, with each step's effect once.
  const killed = faults.flatMap((f) => (f.job ? [f.job] : []));
  const killedJobs = killed.map((id) => ({
    id,
    outcome: tracker.jobs.get(id)?.outcome ?? null,
    effects: ['unmap:a', 'unmap:b', 'unmap:c'].map((step) => effects.get(`${id} ${step}`) ?? 0),
  }));
  const killedBad = killedJobs.filter((k) => k.outcome === null || k.effects.some((n) => n !== 1));
  // Every completed real job's three steps took effect (once: checked above).
  // A real job that failed must have failed as a replay of work it had finished (a failover lost
  // its completion; the agent refused to run it again): its steps took effect all the same.
  const realIncomplete = realJobs
    .filter(([, j]) => j.outcome !== undefined)
    .filter(([id]) => ['unmap:a', 'unmap:b', 'unmap:c'].some((s) => !effects.has(`${id} ${s}`)))
    .map(([id]) => id);

  // Start latency of the simulated fleet's jobs (the real agents' jobs wait behind each other's seconds-long steps).
  const lat = tracker.startLatencies((j) => !j.real);
  const firstFault = faults[0]?.start ?? loadEnd;
  const normal = lat
    .filter((s) => s.at >= t0 + 10_000 && s.at < firstFault)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  const normalP99 = percentile(normal, 99);
  const rec: Recovery[] = recoveries(lat, faults, normalP99, 5_000, loadEnd);
  const all = lat.map((s) => s.ms).sort((a, b) => a - b);
  const slopeFrom = t0 + Math.max(warmupMs, long ? 600_000 : 90_000);
  const sl: Slope[] = slopes(sampler.lives.values(), slopeFrom, loadEnd, (loadEnd - slopeFrom) / 2);
  const heaps = heapLives(t.fleet.map((c, i) => ({ name: `fleet-${i}`, pid: c.proc.pid!, lines: c.lines })));
  const heapSl: Slope[] = slopes(heaps, slopeFrom, loadEnd, (loadEnd - slopeFrom) / 2);
  const realLat = tracker
    .startLatencies((j) => j.real)
    .map((s) => s.ms)
    .sort((a, b) => a - b);

  if (lost.length) failures.push(`${lost.length} jobs answered 202 were not in Redis: ${lost.slice(0, 10).join(', ')}`);
  if (stuck.length) failures.push(`${stuck.length} jobs not finished ${o.stuckBoundMs / 1000} s after the load stopped: ${stuck.slice(0, 10).join(', ')}`);
  if (fleetDoubled.length) failures.push(`${fleetDoubled.length} simulated agents' jobs ran more than once: ${fleetDoubled.slice(0, 10).join(', ')}`);
  if (stepsDoubled.length) failures.push(`${stepsDoubled.length} destructive steps took effect twice: ${stepsDoubled.slice(0, 10).join(', ')}`);
  if (realIncomplete.length) failures.push(`${realIncomplete.length} finished real jobs lack a step's effect: ${realIncomplete.slice(0, 10).join(', ')}`);
  // A job may fail only as a replay its seal refused, after it had run: a failover lost its
  // completion and put it back, and the agent would not run it again.
  const replay = /refused \(replayed\)/;
  const badFailures = failedReasons.filter((f) => !replay.test(f.reason) || tracker.jobs.get(f.id)!.ran.length === 0);
  if (badFailures.length)
    failures.push(
      `${badFailures.length} jobs failed otherwise than as a refused replay of work done: ${badFailures
        .slice(0, 5)
        .map((f) => `${f.id}: ${f.reason}`)
        .join('; ')}`,
    );
  if (killedBad.length) failures.push(`jobs interrupted by a kill not finished with each step once: ${JSON.stringify(killedBad)}`);
  if (load.stats.unanswered) failures.push(`${load.stats.unanswered} notifications never answered 202`);
  if (Object.keys(load.stats.otherStatuses).length) failures.push(`answers other than 202/503: ${JSON.stringify(load.stats.otherStatuses)}`);
  for (const r of rec)
    if (r.recoveryMs === undefined || r.recoveryMs > o.recoveryBoundMs)
      failures.push(
        `${r.kind} at ${Math.round((r.at - t0) / 1000)} s: start latency not back under the normal p99 (${normalP99} ms) within ${o.recoveryBoundMs / 1000} s (${r.recoveryMs ?? 'never'} ms)`,
      );
  // The slope is asserted where it means something (a fit over 20 minutes or more); over a short
  // run GC alone swings it by hundreds of MiB/h, so there the check is for runaway growth: no
  // process may end above SHORT_RUN_GROWTH times its RSS at the end of the warm-up. A simulated
  // fleet process (a few hundred agents in one process) steps up by up to ~2x at a reconnection
  // storm and V8 keeps those pages for minutes or the rest of the run (bench/README.md, "Soak"):
  // a straight line through such steps is no leak measure. Its bound is on the heap still live
  // after a full collection, and its RSS may not pass FLEET_PEAK_GROWTH times its peak before the
  // fit (the warm-up has had its reconnection storms): a leak makes new highs, a storm does not.
  for (const s of sl) {
    if (!OURS.test(s.name)) continue;
    const fleet = s.name.startsWith('fleet-');
    if (s.minutes >= 20 && !fleet && s.mibPerHour > o.rssBoundMiBPerHour)
      failures.push(`${s.name} (pid ${s.pid}) RSS grows ${s.mibPerHour} MiB/h over ${s.minutes} min (bound ${o.rssBoundMiBPerHour})`);
    const peak = peakBefore(sampler.lives.get(`${s.name}#${s.pid}`), slopeFrom);
    if (s.minutes >= 20 && fleet && peak !== undefined && s.maxMiB > FLEET_PEAK_GROWTH * peak)
      failures.push(`${s.name} (pid ${s.pid}) RSS reached ${s.maxMiB} MiB, over ${FLEET_PEAK_GROWTH}x its peak before the fit (${peak} MiB)`);
    if (s.minutes < 20 && s.lastMiB > SHORT_RUN_GROWTH * s.firstMiB)
      failures.push(`${s.name} (pid ${s.pid}) RSS grew from ${s.firstMiB} to ${s.lastMiB} MiB in ${s.minutes} min`);
  }
  for (const s of heapSl)
    if (s.minutes >= 20 && s.mibPerHour > o.heapBoundMiBPerHour)
      failures.push(`${s.name} (pid ${s.pid}): live heap grows ${s.mibPerHour} MiB/h over ${s.minutes} min (bound ${o.heapBoundMiBPerHour})`);
  if (long && heapSl.length < t.fleet.length) failures.push(`live heap reported by ${heapSl.length} of ${t.fleet.length} fleet processes`);
  const kindsDone = [...new Set(faults.map((f) => f.kind))];

  const summary = {
    minutes: o.minutes,
    shape: { agents: o.agents, fleetProcs: o.fleetProcs, realAgents: o.realAgents, stepMs: o.stepMs, load: o.load },
    bounds: { rssMiBPerHour: o.rssBoundMiBPerHour, liveHeapMiBPerHour: o.heapBoundMiBPerHour, recoveryMs: o.recoveryBoundMs, stuckMs: o.stuckBoundMs },
    webhooks: { ...load.stats, lost: lost.length },
    jobs: {
      accepted: jobs.length,
      started: jobs.length - neverRan.length,
      completed: jobs.filter(([, j]) => j.outcome === 'completed').length,
      failed: failed.length,
      failedAsRefusedReplay: failed.length - badFailures.length,
      failedReasons,
      stuck: stuck.length,
      lost: lost.length,
      doubled: fleetDoubled.length + stepsDoubled.length,
      simulatedRerunAfterUnacknowledgedStore: fleetRetriedTwice,
      real: realJobs.length,
      realStartedAgain,
      killedMidStep: killedJobs,
      realStepsTakenEffect: effects.size,
    },
    startLatencyMs: {
      p50: percentile(all, 50),
      p99: percentile(all, 99),
      max: all.at(-1) ?? 0,
      normalP99,
      realP50: percentile(realLat, 50),
      realP99: percentile(realLat, 99),
    },
    faultKinds: kindsDone,
    faults: faults.map((f, i) => ({
      ...f,
      atS: Math.round((f.start - t0) / 1000),
      recoveryMs: rec[i]?.recoveryMs ?? null,
      worstP99Ms: rec[i]?.worstP99Ms ?? null,
    })),
    rssSlopes: sl.map((s) => ({ ...s, bounded: OURS.test(s.name) && !s.name.startsWith('fleet-') })),
    liveHeapSlopes: heapSl.map((s) => ({ ...s, bounded: true })),
    failures,
  };
  mkdirSync(o.outDir, { recursive: true });
  // The real agents' own record (RAN, STEP, DONE lines, their error logs), and every job of note with what happened to it, for a failure's diagnosis.
  writeFileSync(
    join(o.outDir, 'real-agents.log'),
    t.realLives.map((l, i) => `# life ${i}: ${l.node} pid ${l.child.proc.pid}\n${l.child.lines.join('\n')}`).join('\n'),
  );
  const rel = (ms: number | undefined): number | null => (ms === undefined ? null : Math.round((ms - t0) / 100) / 10);
  const ofNote = new Set([...lost, ...stuck, ...failed, ...jobs.filter(([, j]) => j.ran.length > 1).map(([id]) => id)]);
  const notes = await Promise.all(
    [...ofNote].slice(0, 200).map(async (id) => {
      const j = tracker.jobs.get(id)!;
      const hash = await admin.hgetall(hashKey(id));
      return {
        id,
        inRedis: Object.keys(hash).length > 0,
        webhookAttemptsBefore202: j.before,
        sentS: rel(j.sentAt),
        acceptedS: rel(j.acceptedAt),
        ranS: j.ran.map(rel),
        finishedS: rel(j.finishedAt),
        outcome: j.outcome ?? null,
        failedReason: hash['failedReason']?.slice(0, 300) ?? null,
      };
    }),
  );
  admin.disconnect();
  writeFileSync(
    join(o.outDir, 'jobs-of-note.json'),
    `${JSON.stringify({ faults: faults.map((f) => ({ kind: f.kind, startS: rel(f.start), endS: rel(f.end), detail: f.detail })), jobs: notes }, null, 1)}\n`,
  );
  const b = buckets(lat, t0, 10_000);
  writeFileSync(join(o.outDir, 'memory.json'), `${JSON.stringify(samplesRecord([...sampler.lives.values(), ...heaps], t0))}\n`);
  writeFileSync(join(o.outDir, 'summary.json'), `${JSON.stringify({ ...summary, latencyBuckets: b }, null, 1)}\n`);
  writeFileSync(
    join(o.outDir, 'soak.svg'),
    soakSvg({
      title: `volume-medic soak: ${o.minutes} min, ${o.agents} simulated + ${o.realAgents} real agents, 2 receivers, Sentinel (1 primary, 2 replicas)`,
      durationS: Math.ceil((Date.now() - t0) / 1000),
      buckets: b,
      normalP99,
      faults: faults.map((f) => ({ kind: f.kind, start: (f.start - t0) / 1000, end: (f.end - t0) / 1000 })),
      rss: [...sampler.lives.values()].filter((l) => l.name !== 'harness').map((l) => ({ ...l, samples: l.samples.filter((s) => s.t >= t0) })),
      t0,
    }),
  );
  await t.stop();
  return summary;
}
