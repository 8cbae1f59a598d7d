import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../src/adapters/observability/logger.ts';
import { NodeRedisUsers } from '../src/adapters/redis/node-redis-users.ts';
import { nodeUserName, nodeUserRules } from '../src/adapters/redis/node-user-acl.ts';
import type { RedisTarget } from '../src/adapters/redis/redis-target.ts';
import { startSentinelSet } from '../test/support/redis-topology.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { median } from './lib/stats.ts';

// `node bench/node-redis-users.ts`: what enrolling a fleet costs (issue 30): N concurrent
// ensure() calls (a whole fleet enrolling at once after a mass reboot) through NodeRedisUsers'
// batches, on a single private redis-server and on a Sentinel set (primary + 1 replica, so every
// user is applied twice), wall time from the first call to the last answer and the primary's
// main-thread CPU; beside it, the same N users sent one awaited ACL SETUSER at a time to the
// primary only (no batching), a reconcile() that deletes those N (not registered), one that finds
// every server in line, and a reapplyAll() of every registered user.
// Medians of ROUNDS; each round uses fresh node names.

const N = Number(process.env['NODE_USERS_N'] ?? 1000);
const ROUNDS = Number(process.env['NODE_USERS_ROUNDS'] ?? 3);
const PREFIX = 'bench';
const silent = createLogger('bench', 'silent');
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

interface Row {
  topology: string;
  batchedMs: number;
  batchedCpuMs: number;
  unbatchedMs: number;
  cleanupMs: number;
  reconcileMs: number;
  reapplyAllMs: number;
}

async function measure(topology: string, target: RedisTarget, primaryPort: () => Promise<number>): Promise<Row> {
  const users = new NodeRedisUsers({ target, prefix: PREFIX, log: silent });
  const batched: number[] = [];
  const cpu: number[] = [];
  const unbatched: number[] = [];
  const cleanup: number[] = [];
  const reconcile: number[] = [];
  const reapply: number[] = [];
  try {
    await users.ensure('warm-up', sha('w'));
    for (let round = 0; round < ROUNDS; round++) {
      const admin = new Redis(await primaryPort(), '127.0.0.1');
      const before = (await redisCpu(admin)).mainMs;
      let t = performance.now();
      const reports = await Promise.all(Array.from({ length: N }, (_, i) => users.ensure(`r${round}-node-${i}`, sha(`pw-${round}-${i}`))));
      batched.push(performance.now() - t);
      cpu.push((await redisCpu(admin)).mainMs - before);
      if (reports.some((r) => r.failed.length > 0)) throw new Error(`${topology}: ${JSON.stringify(reports.find((r) => r.failed.length > 0))}`);
      t = performance.now();
      for (let i = 0; i < N; i++)
        await admin.call('ACL', 'SETUSER', nodeUserName(`u${round}-node-${i}`), ...nodeUserRules(PREFIX, `u${round}-node-${i}`, sha(`x${i}`)));
      unbatched.push(performance.now() - t);
      // The baseline's users are not registered: the first reconcile deletes them, the second finds all in line.
      t = performance.now();
      await users.reconcile();
      cleanup.push(performance.now() - t);
      t = performance.now();
      const rc = await users.reconcile();
      reconcile.push(performance.now() - t);
      if (rc.failed.length > 0) throw new Error(`${topology}: reconcile ${JSON.stringify(rc.failed)}`);
      t = performance.now();
      const ra = await users.reapplyAll();
      reapply.push(performance.now() - t);
      if (ra.failed.length > 0) throw new Error(`${topology}: reapplyAll ${JSON.stringify(ra.failed)}`);
      admin.disconnect();
    }
  } finally {
    await users.close();
  }
  return {
    topology,
    batchedMs: median(batched),
    batchedCpuMs: median(cpu),
    unbatchedMs: median(unbatched),
    cleanupMs: median(cleanup),
    reconcileMs: median(reconcile),
    reapplyAllMs: median(reapply),
  };
}

const rows: Row[] = [];
const single = await startPrivateRedis();
try {
  rows.push(await measure('single', { kind: 'single', url: single.url }, async () => single.port));
} finally {
  await single.destroy();
}
const set = await startSentinelSet('vmbench');
try {
  rows.push(
    await measure(
      'sentinel (primary + 1 replica)',
      { kind: 'sentinel', name: set.name, sentinels: set.sentinels.map((port) => ({ host: '127.0.0.1', port })) },
      () => set.primaryPort(),
    ),
  );
} finally {
  set.stop();
}
console.log(`${N} nodes, median of ${ROUNDS} rounds (reconcile/reapplyAll: over every registered user, which grows by ${N} a round)`);
console.table(
  rows.map((r) => ({
    topology: r.topology,
    [`ensure() x${N}, concurrent: wall ms`]: Math.round(r.batchedMs),
    'primary main-thread CPU ms': Math.round(r.batchedCpuMs),
    'per node, wall us': Math.round((r.batchedMs * 1000) / N),
    [`${N} awaited SETUSER, one server: wall ms`]: Math.round(r.unbatchedMs),
    [`reconcile(), ${N} extra users deleted: ms`]: Math.round(r.cleanupMs),
    'reconcile(), in line: ms': Math.round(r.reconcileMs),
    'reapplyAll() ms': Math.round(r.reapplyAllMs),
  })),
);
process.exit(0);
