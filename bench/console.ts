import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { nodeQueueName } from '../src/core/catalogue/queues.ts';
import { parseConfig } from '../src/core/config/load.ts';
import { ControlsStore } from '../src/adapters/controls/controls-store.ts';
import { presenceKey } from '../src/adapters/jobstore/agent-presence.ts';
import { incidentIndexKey } from '../src/adapters/jobstore/incident-index.ts';
import { scanQueues } from '../src/adapters/jobstore/queue-scan.ts';
import { COUNTED_STATES } from '../src/control/console/state-counts.ts';
import { knownQueuesKey } from '../src/adapters/redis/known-queues.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { createLogger } from '../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../src/control/receiver.ts';
import { writeSigningKeys } from '../scripts/lib/signing-keys.ts';
import { startOperators, type Operators } from '../test/testkit/operators.ts';
import { alertmanagerBody, nodeNotReadyAlert } from '../test/testkit/payloads.ts';
import { startPrivateRedis, type PrivateRedis } from '../test/support/redis-server.ts';
import { percentile, round } from './lib/stats.ts';

// `npm run bench:console` (issue 23): does every page of the on-call console answer in under
// 300 ms at 10,000 jobs over 5,000 node queues? A private redis-server on loopback, two real
// receivers (src/control/receiver.ts, in this process): one over a store filled through its own webhook
// (Alertmanager batches of 50 alerts, 2 jobs per node) and then moved by real BullMQ workers into
// mixed states (completed, failed, waiting, active, parked as the engine parks them: progress,
// delayed, the controls' parked record), and one over an empty store, the baseline. Then each page,
// signed in as an operator the TokenReview fake knows, requested in rounds that alternate the two
// stores (so both see the same machine load): p50/p95 of each, the ratio to the empty store, and
// the absolute ms against the 300 ms target. CONSOLE_NODES (5000), CONSOLE_JOBS_PER_NODE (2),
// CONSOLE_ROUNDS (5), CONSOLE_PER_ROUND (10). Results: printed, and bench/results/console-<time>.json.

const NODES = Number(process.env['CONSOLE_NODES'] ?? 5000);
const PER_NODE = Number(process.env['CONSOLE_JOBS_PER_NODE'] ?? 2);
const ROUNDS = Number(process.env['CONSOLE_ROUNDS'] ?? 5);
const PER_ROUND = Number(process.env['CONSOLE_PER_ROUND'] ?? 10);
const TARGET_MS = 300;
const TOKEN = 'console-bench-webhook-token-0123456789';
const here = (p: string): string => join(dirname(fileURLToPath(import.meta.url)), p);
const nodeName = (i: number): string => `bench-${String(i).padStart(5, '0')}`;
const silent = createLogger('bench', 'silent');

type Fate = 'completed' | 'failed' | 'waiting' | 'active' | 'parked';
/** Of every 20 jobs: 9 completed, 3 failed, 3 waiting, 2 active, 3 parked. */
const FATES: readonly Fate[] = [
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'failed',
  'failed',
  'failed',
  'waiting',
  'waiting',
  'waiting',
  'active',
  'active',
  'parked',
  'parked',
  'parked',
];
// Waiting jobs stay behind the others on their queue: a worker takes them in order.
const ORDER: Record<Fate, number> = { completed: 0, failed: 0, active: 0, parked: 0, waiting: 1 };

interface Store {
  name: 'loaded' | 'empty';
  receiver: Receiver;
  cookie: string;
  prefix: string;
}

async function signIn(url: string, token: string): Promise<string> {
  const r = await fetch(`${url}/ui/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
    body: new URLSearchParams({ token, next: '/ui/' }),
  });
  const set = r.headers.get('set-cookie');
  if (!set) throw new Error(`sign-in failed: ${r.status} ${await r.text()}`);
  return set.split(';')[0]!;
}

async function fill(receiver: Receiver, redisUrl: string, prefix: string): Promise<{ jobs: number; fates: Record<Fate, number>; fillS: number }> {
  const started = Date.now();
  // Through the receiver's own webhook, as Alertmanager sends it: 50 alerts per request.
  const alerts: ReturnType<typeof nodeNotReadyAlert>[] = [];
  for (let i = 0; i < NODES; i++) for (let k = 0; k < PER_NODE; k++) alerts.push(nodeNotReadyAlert(nodeName(i), 'resolved', `fp${i}x${k}`));
  for (let i = 0; i < alerts.length; i += 50 * 8) {
    await Promise.all(
      Array.from({ length: 8 }, async (_, j) => {
        const batch = alerts.slice(i + j * 50, i + (j + 1) * 50);
        if (!batch.length) return;
        const r = await fetch(`${receiver.url}/v1/alertmanager`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify(alertmanagerBody(batch)),
        });
        if (r.status !== 202) throw new Error(`webhook answered ${r.status}: ${await r.text()}`);
      }),
    );
  }
  // The index is written off the webhook's answer path: wait for it.
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: null });
  for (let t = 0; (await admin.zcard(incidentIndexKey(prefix))) < NODES * PER_NODE; t++) {
    if (t > 200) throw new Error(`the index holds ${await admin.zcard(incidentIndexKey(prefix))} of ${NODES * PER_NODE} jobs`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // Each node's jobs into their fate, by real BullMQ workers (one per queue, a few at a time).
  const store = new ControlsStore(admin, prefix);
  const fates: Record<Fate, number> = { completed: 0, failed: 0, waiting: 0, active: 0, parked: 0 };
  let n = 0;
  const next = async (i: number): Promise<void> => {
    const queue = nodeQueueName(nodeName(i));
    const mine = Array.from({ length: PER_NODE }, () => FATES[n++ % FATES.length]!).sort((a, b) => ORDER[a] - ORDER[b]);
    const worker = new Worker(queue, null, { connection: admin, prefix, autorun: false, skipVersionCheck: true, lockDuration: 3_600_000 });
    try {
      for (const fate of mine) {
        fates[fate] += 1;
        if (fate === 'waiting') continue;
        const token = `bench-${i}-${fate}`;
        const job = (await worker.getNextJob(token, { block: false })) as Job | undefined;
        if (!job) throw new Error(`no job on ${queue}`);
        await settle(job, token, fate, queue, store, nodeName(i));
      }
    } finally {
      await worker.close();
    }
  };
  const lanes = 16;
  let i = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (i < NODES) await next(i++);
    }),
  );
  // Live agents on all but every 50th node, as a worker's stalled check leaves it (queue-scan.ts):
  // those (their jobs waiting or active) show as missing.
  const p = admin.pipeline();
  for (let k = 0; k < NODES; k++) if (k % 50 !== 7) p.set(presenceKey(prefix, nodeQueueName(nodeName(k))), String(Date.now()), 'PX', 3_600_000);
  await p.exec();
  admin.disconnect();
  return { jobs: NODES * PER_NODE, fates, fillS: round((Date.now() - started) / 1000) };
}

const result = (node: string) => ({
  outcome: 'succeeded',
  mode: 'enforce',
  modeWhy: 'RUNBOOK_MODES',
  summary: `released queued I/O of 1 dead map on ${node}`,
  ranOn: node,
  steps: [
    {
      id: 'release-queued-io:3600a0b8',
      description: 'stop queueing I/O on mpatha',
      destructive: true,
      status: 'done',
      evidence: [{ claim: 'every path of mpatha is dead', source: 'multipath -ll mpatha', status: 'holds', observedAt: new Date().toISOString() }],
      commands: [
        {
          argv: ['dmsetup', 'message', 'mpatha', '0', 'fail_if_no_path'],
          exitCode: 0,
          timedOut: false,
          durationMs: 12,
          stdout: 'x'.repeat(600),
          stderr: '',
        },
      ],
    },
  ],
});

async function settle(job: Job, token: string, fate: Fate, queue: string, store: ControlsStore, node: string): Promise<void> {
  switch (fate) {
    case 'completed':
      await job.moveToCompleted(result(node), token, false);
      return;
    case 'failed':
      await job.moveToFailed(new Error(`refused: the bench says so (${node})`), token, false);
      return;
    case 'active':
      return;
    case 'parked': {
      const since = new Date().toISOString();
      await store.park({
        jobId: job.id!,
        queue,
        runbook: job.name,
        node,
        reason: 'approval',
        why: 'a high-risk step needs approval',
        since,
      });
      await job.updateProgress({
        parked: {
          reason: 'approval',
          why: 'a high-risk step needs approval',
          since,
          plan: { steps: result(node).steps.map((s) => ({ ...s, status: 'planned', commands: [], plannedArgv: [s.commands[0]!.argv] })) },
        },
      });
      await job.moveToDelayed(Date.now() + 3_600_000, token);
      return;
    }
    case 'waiting':
      return;
  }
}

const SCAN_ROUNDS = 5;

/**
 * What one refresh of the counts costs, the way before (BullMQ's getJobCounts, one script call per
 * queue, as src/control/console/state-counts.ts did) and now (src/adapters/jobstore/queue-scan.ts): this process's CPU
 * and Redis's main thread, median of SCAN_ROUNDS, on the loaded store's real queues.
 */
async function scanCosts(
  admin: Redis,
  prefix: string,
): Promise<{ queues: number; perQueue: { nodeMs: number; redisMs: number }; chunked: { nodeMs: number; redisMs: number } }> {
  const names = (await admin.smembers(knownQueuesKey(prefix))).sort();
  const queues = names.map((n) => new Queue(n, { connection: admin, prefix, skipVersionCheck: true }));
  const measure = async (f: () => Promise<unknown>) => {
    const node: number[] = [];
    const redis: number[] = [];
    for (let r = 0; r < SCAN_ROUNDS; r++) {
      const r0 = (await redisCpu(admin)).mainMs;
      const c0 = process.cpuUsage();
      await f();
      const c = process.cpuUsage(c0);
      redis.push((await redisCpu(admin)).mainMs - r0);
      node.push((c.user + c.system) / 1000);
    }
    const med = (v: number[]) =>
      round(
        percentile(
          [...v].sort((a, b) => a - b),
          50,
        ),
      );
    return { nodeMs: med(node), redisMs: med(redis) };
  };
  const perQueue = await measure(() => Promise.all(queues.map((q) => q.getJobCounts(...COUNTED_STATES))));
  const chunked = await measure(() => scanQueues(admin, prefix, names));
  return { queues: names.length, perQueue, chunked };
}

interface PageDef {
  name: string;
  path: (s: Store) => string;
}

async function main(): Promise<void> {
  const redis: PrivateRedis = await startPrivateRedis();
  const ops: Operators = await startOperators();
  const keysDir = process.env['SIGNING_KEYS_DIR'] || writeSigningKeys(undefined);
  const start = async (prefix: string) =>
    startReceiver(
      parseConfig('receiver', {
        port: 0,
        listenAddress: '127.0.0.1',
        redisUrl: redis.url,
        queuePrefix: prefix,
        signingKeysDir: keysDir,
        logLevel: 'silent',
        tokens: [TOKEN],
      }),
      { operatorKubeConfig: ops.api.kubeConfig(), log: silent },
    );
  const stores: Store[] = [];
  const receivers: Receiver[] = [];
  try {
    const loaded = await start('cbl');
    receivers.push(loaded);
    const empty = await start('cbe');
    receivers.push(empty);
    console.log(`filling: ${NODES} nodes x ${PER_NODE} jobs through the receiver's webhook, then into mixed states ...`);
    const filled = await fill(loaded, redis.url, 'cbl');
    console.log(`filled in ${filled.fillS} s: ${JSON.stringify(filled.fates)}`);
    const token = ops.token('bench@example.com');
    stores.push(
      { name: 'loaded', receiver: loaded, cookie: await signIn(loaded.url, token), prefix: 'cbl' },
      { name: 'empty', receiver: empty, cookie: await signIn(empty.url, token), prefix: 'cbe' },
    );
    const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
    // A job from the older half of the index, and the cursor of the sixth page of 50.
    const [oldMember] = await admin.zrevrange(incidentIndexKey('cbl'), Math.floor(filled.jobs * 0.7), Math.floor(filled.jobs * 0.7));
    const oldId = oldMember!.split('\t')[1]!;
    const [, cursor] = await admin.zrevrange(incidentIndexKey('cbl'), 249, 249, 'WITHSCORES');
    const middleNode = nodeName(Math.floor(NODES / 3));
    const pages: PageDef[] = [
      { name: 'incidents, first page', path: () => '/ui/' },
      { name: 'incidents, by node', path: () => `/ui/?node=${middleNode}` },
      { name: 'incidents, by state (failed)', path: () => '/ui/?state=failed' },
      { name: 'incidents, by state (parked)', path: () => '/ui/?state=parked' },
      { name: 'incidents, page 6', path: () => `/ui/?before=${cursor}` },
      { name: 'job page', path: () => `/ui/jobs/${oldId}` },
      { name: 'fleet, first page', path: () => '/ui/fleet' },
      { name: 'fleet, all by depth, page 20', path: () => '/ui/fleet?show=all&sort=depth&offset=950' },
      { name: 'fleet JSON (/v1/fleet)', path: () => '/v1/fleet?sort=agent' },
      { name: 'counts and banners JSON (/v1/summary)', path: () => '/v1/summary' },
      { name: 'API: jobs, 50 newest (/v1/jobs)', path: () => '/v1/jobs?limit=50' },
      { name: 'API: jobs of a node', path: () => `/v1/jobs?node=${middleNode}` },
      { name: 'API: jobs by state (failed), 50', path: () => '/v1/jobs?state=failed&limit=50' },
      { name: 'API: jobs, 1,000 newest', path: () => '/v1/jobs?limit=1000' },
      { name: 'API: one job (/v1/jobs/<id>)', path: () => `/v1/jobs/${oldId}` },
    ];
    const get = async (s: Store, path: string): Promise<{ ms: number; status: number }> => {
      const t0 = performance.now();
      const headers: Record<string, string> = path.startsWith('/v1/') ? { authorization: `Bearer ${token}` } : { cookie: s.cookie };
      const r = await fetch(`${s.receiver.url}${path}`, { headers });
      await r.arrayBuffer();
      return { ms: performance.now() - t0, status: r.status };
    };
    // Warm both (the first fleet scan, the scripts' first load).
    for (const s of stores) for (const p of pages) await get(s, p.path(s));
    const samples = new Map<string, { loaded: number[]; empty: number[]; status: Set<string> }>();
    for (const p of pages) samples.set(p.name, { loaded: [], empty: [], status: new Set() });
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of r % 2 ? [...stores].reverse() : stores) {
        for (const p of pages) {
          for (let k = 0; k < PER_ROUND; k++) {
            const { ms, status } = await get(s, p.path(s));
            const e = samples.get(p.name)!;
            e[s.name].push(ms);
            e.status.add(`${s.name} ${status}`);
          }
        }
      }
    }
    const rows = pages.map((p) => {
      const e = samples.get(p.name)!;
      const l = [...e.loaded].sort((a, b) => a - b);
      const b = [...e.empty].sort((a, b) => a - b);
      const p95 = percentile(l, 95);
      return {
        page: p.name,
        path: p.path(stores[0]!),
        loadedP50: round(percentile(l, 50)),
        loadedP95: round(p95),
        emptyP50: round(percentile(b, 50)),
        emptyP95: round(percentile(b, 95)),
        ratioP50: round(percentile(l, 50) / percentile(b, 50), 2),
        ratioP95: round(p95 / percentile(b, 95), 2),
        target: p95 < TARGET_MS ? 'met' : 'MISSED',
        status: [...e.status].sort().join(', '),
      };
    });
    const scan = (await (await fetch(`${loaded.url}/v1/fleet?limit=1`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      scanMs: number;
      nodes: number;
      agentsMissing: number;
    };
    console.log(
      `\nconsole pages at ${filled.jobs} jobs over ${NODES} node queues vs an empty store (${ROUNDS} rounds x ${PER_ROUND} requests each, alternating); fleet scan ${scan.scanMs} ms over ${scan.nodes} nodes, ${scan.agentsMissing} agents missing`,
    );
    console.log('| page | p50 ms | p95 ms | empty p50 | empty p95 | ratio p50 | ratio p95 | < 300 ms (p95) | answers |');
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of rows)
      console.log(
        `| ${r.page} | ${r.loadedP50} | ${r.loadedP95} | ${r.emptyP50} | ${r.emptyP95} | ${r.ratioP50}x | ${r.ratioP95}x | ${r.target} | ${r.status} |`,
      );
    const scanCost = await scanCosts(admin, 'cbl');
    console.log(
      `\none refresh of every queue's counts (${scanCost.queues} queues, ${SCAN_ROUNDS} rounds, median): per-queue getJobCounts (before) ${scanCost.perQueue.nodeMs} ms receiver CPU + ${scanCost.perQueue.redisMs} ms Redis CPU; one script per 250 queues (now) ${scanCost.chunked.nodeMs} ms + ${scanCost.chunked.redisMs} ms`,
    );
    mkdirSync(here('results'), { recursive: true });
    const file = here(`results/console-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ nodes: NODES, jobs: filled.jobs, fates: filled.fates, fillS: filled.fillS, scan, scanCost, rows }, null, 2));
    console.log(`\nwrote ${file}`);
    admin.disconnect();
    // Every page answered (the empty store has no job: 404 there).
    if (rows.some((r) => r.status.split(', ').some((s) => !(s === 'loaded 200' || s === 'empty 200' || s === 'empty 404')))) {
      console.error('some page did not answer 200 on the loaded store');
      process.exitCode = 1;
    }
  } finally {
    for (const r of receivers) await r.close().catch(() => undefined);
    await ops.close();
    await redis.destroy();
  }
}

await main();
