// Runbook scale (issue 8): residual-multipath-cleanup's observe (every map read, every dead map
// probed) and plan, on a simulated node with 1, 16, 64 and 256 dead maps, half of them queueing
// I/O so that their read probe hangs until its deadline. The promise (workers/runbooks/
// residual-multipath-cleanup/probe.ts): probes run at once, so the whole step takes about one
// probe deadline, not N of them. Reported as the ratio of the wall time to that deadline, with
// the plain planning work (the same node, no probe at all) beside it.
import type { ResidualMultipathJob } from '../src/core/catalogue/jobs.ts';
import { InMemoryAttachedVolumes } from '../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { observe } from '../workers/runbooks/residual-multipath-cleanup/observe.ts';
import { plan } from '../workers/runbooks/residual-multipath-cleanup/plan.ts';
import { DEFAULT_POLICY, type ResidualPolicy } from '../workers/runbooks/residual-multipath-cleanup/policy.ts';
import { MultipathNode } from '../test/testkit/multipath-node.ts';
import { round } from './lib/stats.ts';

export interface ScaleRow {
  maps: number;
  hanging: number;
  probeDeadlineMs: number;
  /** observe + plan, probes included. */
  totalMs: number;
  /** totalMs / probeDeadlineMs: about 1 when probes run at once. */
  ratioToDeadline: number;
  /** observe + plan with every map queueing I/O in dry-run (no probe): the non-probe work. */
  withoutProbesMs: number;
  probes: number;
  maxConcurrentProbes: number;
  residual: number;
  held: number;
}

const job: ResidualMultipathJob = {
  version: 1,
  key: 'residual_bench_scale',
  runbook: 'residual-multipath-cleanup',
  target: { node: 'bench-node' },
  evidence: [{ source: 'api', summary: 'bench', raw: {} }],
};

async function once(n: number, policy: ResidualPolicy, dryRun: boolean): Promise<{ ms: number; host: MultipathNode; residual: number; held: number }> {
  const host = MultipathNode.allDead(n);
  const started = performance.now();
  const facts = await observe(job, host, {
    // A cluster where nothing is attached to the node: unknown attachments would hold every map
    // before its probe, and the bench would time nothing.
    attached: new InMemoryAttachedVolumes({}),
    policy,
    ranOn: 'bench-node',
    now: () => new Date(),
    dryRun,
    stateDir: '/var/lib/volume-medic',
  });
  const p = plan(facts, policy);
  const ms = performance.now() - started;
  const verdicts = p.assessments.map((a) => a.verdict.kind);
  return { ms, host, residual: verdicts.filter((v) => v === 'residual').length, held: verdicts.filter((v) => v === 'held').length };
}

export async function runbookScale(sizes: readonly number[] = [1, 16, 64, 256], probeDeadlineMs = 2_000): Promise<ScaleRow[]> {
  // A job normally refuses more than 8 maps (a storage outage, not leftovers); the bench lifts
  // that limit to measure the machinery itself.
  const policy: ResidualPolicy = { ...DEFAULT_POLICY, probeTimeoutMs: probeDeadlineMs, maxMapsPerJob: 10_000 };
  await once(4, policy, true); // warm up the modules and the JIT
  const rows: ScaleRow[] = [];
  for (const n of sizes) {
    const dry = await once(n, policy, true);
    const run = await once(n, policy, false);
    rows.push({
      maps: n,
      hanging: run.host.maps.filter((m) => m.queueing).length,
      probeDeadlineMs,
      totalMs: round(run.ms, 1),
      ratioToDeadline: round(run.ms / probeDeadlineMs, 2),
      withoutProbesMs: round(dry.ms, 1),
      probes: run.host.probes,
      maxConcurrentProbes: run.host.maxConcurrentProbes,
      residual: run.residual,
      held: run.held,
    });
  }
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await runbookScale());
}
