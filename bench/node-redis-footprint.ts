import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { QUEUE_EVENTS_KEPT } from '../src/adapters/jobstore/store-pipeline.ts';
import { createLogger } from '../src/adapters/observability/logger.ts';
import { ControlsStore } from '../src/adapters/controls/controls-store.ts';
import { createNodeAgent } from '../workers/node-agent/agent.ts';
import type { RunbookRegistry } from '../workers/engine/registry.ts';
import { createResidualMultipathCleanup } from '../workers/runbooks/residual-multipath-cleanup/handler.ts';
import { InMemoryAttachedVolumes } from '../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import type { RemediationJob } from '../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { sealJob } from '../src/core/trust/work.ts';
import { nodeKeyPattern, nodeOfKey } from '../src/core/redis-budget/accounting.ts';
import { testConfig } from '../test/support/config.ts';
import { testSealer } from '../test/support/trust.ts';
import { alertmanagerBody, nodeNotReadyAlert } from '../test/testkit/payloads.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { MultipathNode } from '../test/testkit/multipath-node.ts';

// `node bench/node-redis-footprint.ts` (issue 44): what a busy node's keys hold in Redis, to size
// the per-node memory budget (NODE_REDIS_BUDGET_MIB) against. A real node agent (createNodeAgent:
// seal check, controls, statistics, audit) runs the real residual-multipath-cleanup runbook on a
// simulated node with FOOTPRINT_MAPS (8) dead multipath maps (8: the most one job takes,
// RESIDUAL_MAX_MAPS_PER_JOB), in dry-run, FOOTPRINT_JOBS (20) jobs each carrying a real
// Alertmanager body as evidence, all finished and kept for the queue's window, on a queue with the
// receiver's options (FOOTPRINT_EVENTS_KEPT overrides its events stream's length); then its queue's
// audit list is filled to its cap (1,000 entries) with entries as long as a destructive step's.
// Prints MEMORY USAGE (SAMPLES 0: exact) summed over the node's keys (`<prefix>:vm-node-{<node>}:*`),
// by kind of key.

const JOBS = Number(process.env['FOOTPRINT_JOBS'] ?? 20);
const AUDIT = 1_000;
const PREFIX = 'fp';
const NODE = 'busy-node-1';
const DAY = 86_400_000;

const redis = await startPrivateRedis();
const admin = new Redis(redis.url);
const stateDir = mkdtempSync(join(tmpdir(), 'vm-footprint-'));
const log = createLogger('footprint', 'silent');
const config = testConfig({ redisUrl: redis.url, queuePrefix: PREFIX, nodeName: NODE, stateDir, defaultMode: 'dry-run' });
const MAPS = Number(process.env['FOOTPRINT_MAPS'] ?? 8);
const host = MultipathNode.allDead(MAPS);
const registry: RunbookRegistry = {
  'residual-multipath-cleanup': createResidualMultipathCleanup({ host, stateDir, attached: new InMemoryAttachedVolumes({}) }),
};
const agent = createNodeAgent({ config, log, registry });
// The receiver's queue options (src/adapters/jobstore/dispatcher.ts), FOOTPRINT_EVENTS_KEPT to compare.
const eventsKept = Number(process.env['FOOTPRINT_EVENTS_KEPT'] ?? QUEUE_EVENTS_KEPT);
const queue = new Queue(nodeQueueName(NODE), { connection: admin, prefix: PREFIX, streams: { events: { maxLen: eventsKept } } });
try {
  const body = alertmanagerBody([nodeNotReadyAlert(NODE, 'resolved')]);
  for (let i = 0; i < JOBS; i++) {
    const job: RemediationJob = {
      version: 1,
      key: `fp-${i}`,
      runbook: 'residual-multipath-cleanup',
      target: { node: NODE },
      evidence: [{ source: 'alertmanager', summary: `KubeNodeNotReady resolved for ${NODE}`, raw: body }],
    };
    await queue.add(job.runbook, sealJob(testSealer('receiver'), nodeQueueName(NODE), job, DAY), { jobId: job.key });
  }
  for (let t = 0; ; t++) {
    const c = await queue.getJobCounts('completed', 'failed');
    if ((c['completed'] ?? 0) + (c['failed'] ?? 0) >= JOBS) break;
    if (t > 1200) throw new Error(`jobs did not finish: ${JSON.stringify(c)}`);
    await sleep(250);
  }
  // The queue's audit list at its cap, each entry as long as a destructive step's (its evidence).
  const store = new ControlsStore(admin, PREFIX, () => new Date(), { allowUnsigned: false, audit: { sealer: testSealer('node-agent') } });
  const why =
    `dmsetup message mpatha 0 fail_if_no_path: every path failed faulty in 3 observations over 180 s (multipath -ll at ${new Date().toISOString()}), no holder, no mount, open count 0, read probe timed out after 10000 ms. `.repeat(
      2,
    );
  for (let i = 0; i < AUDIT; i++)
    await store.audit('destructive-step', `node/${NODE}/job/fp-${i % JOBS}`, { by: `node-agent/${NODE}`, why }, nodeQueueName(NODE));
  const sizes = new Map<string, { keys: number; bytes: number }>();
  let total = 0;
  let keys = 0;
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', nodeKeyPattern(PREFIX), 'COUNT', 1000);
    cursor = next;
    const p = admin.pipeline();
    for (const k of batch) p.call('MEMORY', 'USAGE', k, 'SAMPLES', '0');
    const res = (await p.exec()) ?? [];
    batch.forEach((k, i) => {
      if (nodeOfKey(PREFIX, k) !== NODE) return;
      const bytes = Number(res[i]?.[1] ?? 0);
      const suffix = k.slice(`${PREFIX}:${nodeQueueName(NODE)}:`.length);
      const kind = suffix.startsWith('vm:')
        ? suffix
        : /^fp-\d+$/.test(suffix)
          ? 'job hashes'
          : /^fp-\d+:/.test(suffix)
            ? `job ${suffix.split(':')[1]}`
            : suffix;
      const s = sizes.get(kind) ?? { keys: 0, bytes: 0 };
      s.keys++;
      s.bytes += bytes;
      sizes.set(kind, s);
      total += bytes;
      keys++;
    });
  } while (cursor !== '0');
  const kib = (b: number): number => Math.round(b / 102.4) / 10;
  console.log(`node ${NODE}: ${JOBS} finished jobs (${MAPS} dead maps each), audit list of ${AUDIT}: ${keys} keys, ${kib(total)} KiB`);
  console.log(`per job: ${kib((sizes.get('job hashes')?.bytes ?? 0) / JOBS)} KiB (job hash)`);
  for (const [kind, s] of [...sizes].sort((a, b) => b[1].bytes - a[1].bytes))
    console.log(`  ${kind.padEnd(24)} ${String(s.keys).padStart(5)} keys ${String(kib(s.bytes)).padStart(9)} KiB`);
} finally {
  await queue.close();
  await agent.close();
  admin.disconnect();
  await redis.destroy();
  rmSync(stateDir, { recursive: true, force: true });
}
