import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { runSoak } from './soak/run.ts';

// npm run soak -- --minutes N [--out DIR]: issue 48's soak with faults (bench/README.md, "Soak").
// SOAK_AGENTS (simulated agents), SOAK_FLEET_PROCS, SOAK_REAL_AGENTS, SOAK_RATE (single-alert
// notifications per second), SOAK_ACK_REPLICAS (the receivers' REDIS_ACK_REPLICAS), SOAK_RSS_BOUND
// (MiB/h), SOAK_HEAP_BOUND (MiB/h, the simulated fleet's live heap), SOAK_RECOVERY_BOUND_S,
// SOAK_STUCK_BOUND_S change the shape and the bounds. Exits 1 when an invariant failed.

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, out: { type: 'string' } } });
const minutes = Number(values.minutes);
if (!(minutes >= 3)) throw new Error('--minutes: at least 3 (a warm-up, one fault, a drain)');
const env = (k: string, d: number): number => Number(process.env[k] ?? d);
const outDir = values.out ?? join(new URL('.', import.meta.url).pathname, 'results', `soak-${new Date().toISOString().replace(/[:.]/g, '-')}`);

const s = await runSoak({
  minutes,
  outDir,
  agents: env('SOAK_AGENTS', 200),
  fleetProcs: env('SOAK_FLEET_PROCS', 2),
  realAgents: env('SOAK_REAL_AGENTS', 3),
  stepMs: env('SOAK_STEP_MS', 400),
  // Both replicas: with one of two (REDIS_ACK_REPLICAS's default), a failover loses jobs answered 202 (bench/README.md, "Soak").
  ackReplicas: env('SOAK_ACK_REPLICAS', 2),
  load: { rate: env('SOAK_RATE', 4), burstEverySec: 30, burstBodies: 5, burstAlerts: 20, realShare: env('SOAK_REAL_SHARE', 0.08) },
  // Asserted on fits of 20 minutes or more (run.ts): a short run checks gross growth only.
  rssBoundMiBPerHour: env('SOAK_RSS_BOUND', 60),
  heapBoundMiBPerHour: env('SOAK_HEAP_BOUND', 20),
  recoveryBoundMs: env('SOAK_RECOVERY_BOUND_S', 60) * 1000,
  stuckBoundMs: env('SOAK_STUCK_BOUND_S', 120) * 1000,
});

const w = s['webhooks'] as Record<string, number>;
const j = s['jobs'] as Record<string, number>;
const l = s['startLatencyMs'] as Record<string, number>;
console.log(`\nsoak ${minutes} min: report in ${outDir} (summary.json, soak.svg)`);
console.log(`webhooks: ${w['sent']} sent, ${w['accepted']} answered 202 (${w['retried']} after a retry), ${w['lost']} lost, ${w['unanswered']} unanswered`);
console.log(
  `jobs: ${j['accepted']} accepted, ${j['completed']} completed, ${j['failed']} failed, ${j['doubled']} doubled, ${j['stuck']} stuck; real agents' jobs ${j['real']} (${j['realStartedAgain']} started again: after a kill, a parked wait or a lost completion; ${j['realStepsTakenEffect']} step effects)`,
);
console.log(
  `start latency: p50 ${l['p50']} ms, p99 ${l['p99']} ms, max ${l['max']} ms; normal p99 ${l['normalP99']} ms (real agents: p50 ${l['realP50']}, p99 ${l['realP99']})`,
);
console.log('faults (recovery: back under the normal p99):');
for (const f of s['faults'] as { kind: string; atS: number; recoveryMs: number | null; worstP99Ms: number; detail: string }[])
  console.log(
    `  ${String(f.atS).padStart(5)} s  ${f.kind.padEnd(18)} recovery ${f.recoveryMs === null ? 'never' : `${f.recoveryMs} ms`}, p99 meanwhile ${f.worstP99Ms} ms  (${f.detail})`,
  );
console.log('RSS slope after the warm-up (MiB/h):');
for (const r of s['rssSlopes'] as { name: string; pid: number; minutes: number; firstMiB: number; lastMiB: number; mibPerHour: number; bounded: boolean }[])
  console.log(
    `  ${r.name.padEnd(16)} pid ${String(r.pid).padEnd(8)} ${String(r.mibPerHour).padStart(7)} MiB/h over ${r.minutes} min (${r.firstMiB} -> ${r.lastMiB} MiB)${r.bounded ? '' : ' (not bounded)'}`,
  );
console.log('live heap after a full collection, simulated fleet processes (MiB/h):');
for (const r of s['liveHeapSlopes'] as { name: string; minutes: number; firstMiB: number; lastMiB: number; mibPerHour: number }[])
  console.log(`  ${r.name.padEnd(16)} ${String(r.mibPerHour).padStart(7)} MiB/h over ${r.minutes} min (${r.firstMiB} -> ${r.lastMiB} MiB)`);
if (s.failures.length) {
  console.log(`\nFAILED invariants:\n  ${s.failures.join('\n  ')}`);
  process.exit(1);
}
console.log('\nevery invariant held');
process.exit(0);
