import { Redis } from 'ioredis';
import { nodeUsage, trimNode } from '../src/adapters/redis/node-memory.ts';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { redisCpu } from './lib/redis-cpu.ts';

// `node bench/node-redis-budget-pass.ts` (issue 44): what one count of every node's keys costs
// (src/adapters/redis/node-memory.ts nodeUsage: SCAN + MEMORY USAGE SAMPLES 0, pipelined), for a
// fleet of BUDGET_NODES (10,000) nodes on one private redis-server, each with the keys a queue
// holds (BullMQ's meta, id, events stream, stalled-check, completed set; BUDGET_JOBS (3) finished
// jobs of 3.3 KiB with their logs; an audit list of 50 entries), beside 100,000 fleet keys of
// another prefix that the SCAN walks past. Then what trimming one node costs: a flood of
// BUDGET_FLOOD_KEYS (500,000) keys of 100 bytes (a flood of many small keys: the costly shape)
// cut back to a 32 MiB budget. Wall time, and Redis' main-thread CPU (INFO cpu).

const NODES = Number(process.env['BUDGET_NODES'] ?? 10_000);
const JOBS = Number(process.env['BUDGET_JOBS'] ?? 3);
const FLOOD = Number(process.env['BUDGET_FLOOD_KEYS'] ?? 500_000);
const PREFIX = 'bp';
const MiB = 1_048_576;

const redis = await startPrivateRedis();
const admin = new Redis(redis.url);
try {
  const job = JSON.stringify({ data: 'x'.repeat(1_500), returnvalue: 'r'.repeat(1_500) });
  for (let i = 0; i < NODES; i += 200) {
    const p = admin.pipeline();
    for (let n = i; n < Math.min(NODES, i + 200); n++) {
      const q = `${PREFIX}:${nodeQueueName(`node-${n}`)}`;
      p.hset(`${q}:meta`, 'opts.maxLenEvents', '20', 'version', 'bullmq:5');
      p.set(`${q}:id`, String(JOBS));
      p.set(`${q}:stalled-check`, '1', 'PX', 600_000);
      for (let e = 0; e < 10; e++) p.xadd(`${q}:events`, '*', 'event', 'completed', 'jobId', `j${e}`, 'returnvalue', '{}');
      for (let j = 0; j < JOBS; j++) {
        p.hset(`${q}:j${j}`, 'name', 'residual-multipath-cleanup', 'data', job, 'timestamp', '1');
        p.rpush(`${q}:j${j}:logs`, 'started', 'finished');
        p.zadd(`${q}:completed`, j, `j${j}`);
      }
      p.rpush(`${q}:vm:audit`, ...Array.from({ length: 50 }, (_, a) => `{"seq":${a},"why":"${'w'.repeat(300)}"}`));
    }
    await p.exec();
  }
  for (let i = 0; i < 100_000; i += 5_000) {
    const p = admin.pipeline();
    for (let k = i; k < i + 5_000; k++) p.set(`other:${k}`, 'v');
    await p.exec();
  }
  const dbsize = await admin.dbsize();
  const cpu0 = await redisCpu(admin);
  let t = performance.now();
  const { usage, keys } = await nodeUsage(admin, PREFIX);
  const passMs = performance.now() - t;
  const cpu1 = await redisCpu(admin);
  const perNode = [...usage.values()].reduce((a, b) => a + b, 0) / usage.size;
  console.log(
    `count: ${usage.size} nodes, ${keys} node keys of ${dbsize} in Redis (${Math.round(perNode / 1024)} KiB a node): ${Math.round(passMs)} ms, Redis main thread ${Math.round(cpu1.mainMs - cpu0.mainMs)} ms`,
  );

  const flooded = `${PREFIX}:${nodeQueueName('node-0')}`;
  for (let i = 0; i < FLOOD; i += 10_000) {
    const p = admin.pipeline();
    for (let k = i; k < i + 10_000; k++) p.set(`${flooded}:f${k}`, 'f'.repeat(100));
    await p.exec();
  }
  const cpu2 = await redisCpu(admin);
  t = performance.now();
  const trim = await trimNode(admin, PREFIX, 'node-0', 32 * MiB);
  const trimMs = performance.now() - t;
  const cpu3 = await redisCpu(admin);
  console.log(
    `trim: ${FLOOD} keys of 100 bytes (${Math.round(trim.before / MiB)} MiB) to 32 MiB: ${trim.keys} keys (${Math.round(trim.bytes / MiB)} MiB) removed in ${Math.round(trimMs)} ms, Redis main thread ${Math.round(cpu3.mainMs - cpu2.mainMs)} ms`,
  );
} finally {
  admin.disconnect();
  await redis.destroy();
}
