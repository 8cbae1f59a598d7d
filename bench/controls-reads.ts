import { Redis } from 'ioredis';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { ControlsStore } from '../src/adapters/controls/controls-store.ts';
import { queueControlKeys, controlKeys } from '../src/core/controls/redis-keys.ts';
import { finishedExposition, queueStatsKey, statsKey } from '../src/adapters/stats/job-stats.ts';
import { knownQueuesKey } from '../src/adapters/redis/known-queues.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { median } from './lib/stats.ts';

// `npm run bench:controls-reads`: what the readers of the per-queue control keys (issue 30:
// each worker writes its parked jobs and audit entries under its own queue) cost at fleet scale.
// N node queues are known; 1% of them have a parked job, 5% a handful of audit entries, and the
// fleet list holds 200 of the receiver's; every queue has its job statistics (4 counters, as a
// node that ran one runbook a few times has). Reported: wall time (median of 5) of parkedJobs(),
// auditLog(100) and the statistics' exposition (/metrics: the shared hash and every queue's), and
// Redis main-thread CPU per call, on a private redis-server on this machine; and, as the
// baseline, the exposition as it was before per-queue statistics: the same counts in the one
// shared hash.

const SIZES = (process.env['CONTROLS_READS_SIZES'] ?? '1000,10000').split(',').map(Number);
const ROUNDS = 5;
const PREFIX = 'bench';

async function seed(redis: Redis, n: number): Promise<void> {
  await redis.flushall();
  const p = redis.pipeline();
  const queues: string[] = [];
  const t = Date.now();
  for (let i = 0; i < n; i++) {
    const q = nodeQueueName(`node-${i}`);
    queues.push(q);
    const k = queueControlKeys(PREFIX, q);
    if (i % 100 === 0)
      p.hset(
        k.parked,
        `job-${i}`,
        JSON.stringify({
          jobId: `job-${i}`,
          queue: q,
          runbook: 'residual-multipath-cleanup',
          node: `node-${i}`,
          reason: 'approval',
          why: 'bench',
          since: new Date(t - i).toISOString(),
        }),
      );
    p.hset(
      queueStatsKey(PREFIX, q),
      'ran|residual-multipath-cleanup|planned|1',
      '3',
      'ran|residual-multipath-cleanup|succeeded|5',
      '1',
      'summs|residual-multipath-cleanup',
      '4200',
      'untrusted|job|bad-mac',
      String(i % 2),
    );
    if (i % 20 === 0)
      for (let e = 0; e < 5; e++)
        p.lpush(
          k.audit,
          JSON.stringify({
            at: new Date(t - i * 10 - e).toISOString(),
            by: `node-${i}`,
            action: 'work-refused',
            target: `job/job-${i}`,
            why: 'bench',
          }),
        );
  }
  for (let e = 0; e < 200; e++)
    p.lpush(
      controlKeys(PREFIX).audit,
      JSON.stringify({ at: new Date(t - e * 1000).toISOString(), by: 'alice', action: 'pause', target: 'cluster', why: 'bench' }),
    );
  p.sadd(knownQueuesKey(PREFIX), ...queues);
  await p.exec();
}

async function measure(admin: Redis, f: () => Promise<unknown>): Promise<{ cpuMs: number; wallMs: number }> {
  const cpu: number[] = [];
  const wall: number[] = [];
  await f(); // warm: connections, script of nothing, JIT
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = (await redisCpu(admin)).mainMs;
    const t0 = performance.now();
    await f();
    wall.push(performance.now() - t0);
    cpu.push((await redisCpu(admin)).mainMs - c0);
  }
  return { cpuMs: median(cpu), wallMs: median(wall) };
}

const server = await startPrivateRedis();
const redis = new Redis(server.url);
const admin = new Redis(server.url);
try {
  const store = new ControlsStore(redis, PREFIX);
  for (const n of SIZES) {
    await seed(redis, n);
    let parked = 0;
    let audit = 0;
    const p = await measure(admin, async () => {
      parked = (await store.parkedJobs()).length;
    });
    const a = await measure(admin, async () => {
      audit = (await store.auditLog(100)).length;
    });
    const s = await measure(admin, () => finishedExposition(redis, PREFIX));
    // Baseline: the same counts in the shared hash alone (before per-queue statistics).
    await redis.hset(
      statsKey(PREFIX),
      'ran|residual-multipath-cleanup|planned|1',
      String(3 * n),
      'ran|residual-multipath-cleanup|succeeded|5',
      String(n),
      'summs|residual-multipath-cleanup',
      String(4200 * n),
      'untrusted|job|bad-mac',
      String(n / 2),
    );
    await redis.del(knownQueuesKey(PREFIX));
    const b = await measure(admin, () => finishedExposition(redis, PREFIX));
    console.log(
      JSON.stringify({
        queues: n,
        parkedJobs: { found: parked, wallMs: +p.wallMs.toFixed(1), redisCpuMs: +p.cpuMs.toFixed(1) },
        auditLog100: { found: audit, wallMs: +a.wallMs.toFixed(1), redisCpuMs: +a.cpuMs.toFixed(1) },
        statsExposition: { wallMs: +s.wallMs.toFixed(1), redisCpuMs: +s.cpuMs.toFixed(1) },
        statsSharedHashOnly: { wallMs: +b.wallMs.toFixed(1), redisCpuMs: +b.cpuMs.toFixed(1) },
      }),
    );
  }
} finally {
  redis.disconnect();
  admin.disconnect();
  await server.destroy();
}
