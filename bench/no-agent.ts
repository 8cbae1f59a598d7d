import { Redis } from 'ioredis';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { presenceKey } from '../src/adapters/jobstore/agent-presence.ts';
import { knownQueuesKey } from '../src/adapters/redis/known-queues.ts';
import { NoAgentWatch } from '../workers/cluster-worker/no-agent-watch.ts';
import { createLogger } from '../src/adapters/observability/logger.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { median } from './lib/stats.ts';

// `npm run bench:no-agent`: what one no-agent check (workers/cluster-worker/no-agent-watch.ts) costs Redis at
// fleet scale. N node queues are known; every agent is present (its presence key, as a live agent
// keeps it), 1% of queues hold a waiting job, and 10 queues have jobs but no agent.
// Reported: Redis main-thread CPU per check and wall time, as a ratio against a baseline measured
// in the same run on the same server: one PING per queue (the cheapest round trip per queue).
// What the agents write for this (one SET per half interval) is not counted here.

const SIZES = (process.env['NO_AGENT_SIZES'] ?? '1000,10000').split(',').map(Number);
const ROUNDS = 5;
const PREFIX = 'bench';

async function seed(redis: Redis, n: number): Promise<void> {
  await redis.flushall();
  const p = redis.pipeline();
  const queues: string[] = [];
  for (let i = 0; i < n; i++) {
    const q = nodeQueueName(`node-${i}`);
    queues.push(q);
    const base = `${PREFIX}:${q}:`;
    if (i >= 10) p.set(presenceKey(PREFIX, q), String(Date.now()), 'PX', 3_600_000);
    if (i < 10 || i % 100 === 0) {
      p.lpush(`${base}wait`, `job-${i}`);
      p.hset(`${base}job-${i}`, 'name', 'residual-multipath-cleanup', 'timestamp', String(Date.now() - 3_600_000));
    }
  }
  p.sadd(knownQueuesKey(PREFIX), ...queues);
  await p.exec();
}

async function measure(admin: Redis, f: () => Promise<unknown>): Promise<{ cpuMs: number; wallMs: number }> {
  const cpu: number[] = [];
  const wall: number[] = [];
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
  for (const n of SIZES) {
    await seed(redis, n);
    let offset = 0;
    const watch = new NoAgentWatch({
      redis,
      prefix: PREFIX,
      graceMs: 60_000,
      deadlineMs: 0,
      intervalMs: 30_000,
      log: createLogger('bench', 'silent'),
      workerConnection: () => {
        throw new Error('the bench fails nothing');
      },
      now: () => Date.now() + offset,
    });
    // Absence counts from the watch's start: the checks below are 2 minutes later.
    offset = 120_000;
    const queues = await redis.smembers(knownQueuesKey(PREFIX));
    const baseline = await measure(admin, () => Promise.all(queues.map(() => redis.ping())));
    let stranded = 0;
    const check = await measure(admin, async () => {
      stranded = [...(await watch.check()).stranded.values()].flat().length;
    });
    console.log(
      JSON.stringify({
        queues: n,
        stranded,
        check: { redisCpuMs: +check.cpuMs.toFixed(1), wallMs: +check.wallMs.toFixed(1) },
        baselinePingPerQueue: { redisCpuMs: +baseline.cpuMs.toFixed(1), wallMs: +baseline.wallMs.toFixed(1) },
        ratio: { redisCpu: +(check.cpuMs / baseline.cpuMs).toFixed(2), wall: +(check.wallMs / baseline.wallMs).toFixed(2) },
        redisCpuShareAt30sInterval: `${((check.cpuMs / 30_000) * 100).toFixed(3)}%`,
      }),
    );
    await watch.close();
  }
} finally {
  redis.disconnect();
  admin.disconnect();
  await server.destroy();
}
