// `node bench/redis-add-parts.ts` (issue 21): where the Redis CPU of one of our new jobs goes
// beyond the plain-addBulk reference's, on a private redis-server, new 50-alert groups, the same
// alternating rounds and four adds on their way as bench/redis-add-cost.ts. Per job, six ways:
//   ours-indexed            the receiver's batch add as it runs: with the console's incident index
//   ours                    the receiver's batch add (batch-add.ts): sealed job as data, our options
//   ours-no-options         the same jobs and call, options only the job id
//   alert-data-our-options  the batch add, the raw alert as data (the reference's), our options
//   alert-data-batch        the batch add, the raw alert, only the job id (the reference's job)
//   ours-addBulk            our jobs and options through BullMQ's Queue.addBulk (an EVALSHA each)
//   reference               the reference server's Queue.addBulk: raw alert, only the job id
//   reference-per-node      the same jobs, each on its node's queue (where ours go) instead of one
// So ours - ours-no-options is what our options cost, ours - alert-data-our-options what our
// bigger data costs, alert-data-batch - reference what the batch script costs beside pipelined
// EVALSHAs, reference-per-node - reference what one queue per node costs. ROUNDS (default 3),
// GROUPS of 50 alerts per mode and round (400). Figures move with the machine: read them against
// each other. CALLGRIND=1 runs the server under valgrind (bench/lib/callgrind.ts) and counts its
// instructions per job instead: the same figure on any machine, without what the kernel spends on
// the server's system calls (one round trip per batch here, four batches on their way).
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { AlertmanagerPayload, alertmanagerSignals } from '../src/control/sources/alertmanager.ts';
import { triage } from '../src/control/triage/triage.ts';
import { InMemoryLookups } from '../src/adapters/kube/lookups.ts';
import { jobOptions } from '../src/adapters/jobstore/store-pipeline.ts';
import { BatchAdd, captureAdd, DATA_PLACEHOLDER, type BatchItem } from '../src/adapters/jobstore/batch-add.ts';
import { queueFor } from '../src/core/catalogue/queues.ts';
import { jobNode } from '../src/core/catalogue/jobs.ts';
import { IncidentIndex } from '../src/adapters/jobstore/incident-index.ts';
import { keyringFor } from '../src/core/trust/keyring.ts';
import { sealerOf } from '../src/core/trust/seal.ts';
import { sealedJobText } from '../src/core/trust/work.ts';
import { fill, groupedAlerts } from '../test/testkit/load-payloads.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { callgrindCounter } from './lib/callgrind.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sealer = sealerOf(keyringFor('receiver', new Map([['receiver.b', randomBytes(32)]])))!;
const MODES = [
  'ours-indexed',
  'ours',
  'ours-no-options',
  'alert-data-our-options',
  'alert-data-batch',
  'ours-addBulk',
  'reference',
  'reference-per-node',
] as const;
type Mode = (typeof MODES)[number];
const CALLGRIND = process.env['CALLGRIND'] === '1';
const GROUPS = Number(process.env['GROUPS'] ?? 400);
const outDir = CALLGRIND ? mkdtempSync(join(tmpdir(), 'vm-callgrind-')) : undefined;
const redis = await startPrivateRedis(outDir ? { callgrind: { outDir } } : {});
const counter = outDir ? callgrindCounter(redis.pid()!, outDir) : undefined;
const conn = new Redis(redis.url, { maxRetriesPerRequest: null });
const admin = new Redis(redis.url);
const payload = groupedAlerts(50);
const salt = Date.now().toString(36);
let serial = 0;
const group = async () => {
  const body = AlertmanagerPayload.parse(JSON.parse(fill(payload, `${salt}c${serial++}`)));
  const { jobs } = await triage(alertmanagerSignals(body, { nodeRecoveryAlerts: new Set(['KubeNodeNotReady', 'KubeNodeUnreachable']) }).signals, {
    lookups: new InMemoryLookups(),
  });
  return { jobs, alerts: body.alerts };
};
const queues = new Map<string, Queue>();
const queue = async (name: string) => {
  let q = queues.get(name);
  if (!q) {
    q = new Queue(name, { connection: conn, prefix: 'd' });
    queues.set(name, q);
    await q.client;
  }
  return q;
};
const batch = new BatchAdd(conn);
const index = new IncidentIndex(conn, 'd');
type G = Awaited<ReturnType<typeof group>>;
const add = async (mode: Mode, gs: readonly G[]): Promise<number> => {
  const jobs = gs.flatMap((g) => g.jobs);
  const alerts = gs.flatMap((g) => g.alerts);
  if (mode === 'reference') {
    await (await queue('addbulk')).addBulk(alerts.map((a) => ({ name: 'incident', data: a, opts: { jobId: `alert-${a.fingerprint}` } })));
    return alerts.length;
  }
  if (mode === 'reference-per-node') {
    const byQ = new Map<string, { name: string; data: unknown; opts: { jobId: string } }[]>();
    alerts.forEach((a, i) => {
      const n = queueFor(jobs[i]!);
      const l = byQ.get(n) ?? [];
      l.push({ name: 'incident', data: a, opts: { jobId: `alert-${a.fingerprint}` } });
      byQ.set(n, l);
    });
    await Promise.all([...byQ].map(async ([n, js]) => (await queue(n)).addBulk(js)));
    return alerts.length;
  }
  if (mode === 'ours-addBulk') {
    const byQ = new Map<string, typeof jobs>();
    for (const j of jobs) {
      const n = queueFor(j);
      const l = byQ.get(n);
      if (l) l.push(j);
      else byQ.set(n, [j]);
    }
    await Promise.all(
      [...byQ].map(async ([n, js]) =>
        (await queue(n)).addBulk(js.map((j) => ({ name: j.runbook, data: JSON.parse(sealedJobText(sealer, n, j, 86_400_000)), opts: jobOptions(j) }))),
      ),
    );
    return jobs.length;
  }
  const items: BatchItem[] = [];
  if (mode === 'alert-data-batch' || mode === 'alert-data-our-options') {
    const q = await queue('alerts-batch');
    for (let i = 0; i < alerts.length; i++) {
      const a = alerts[i]!;
      const id = `alert-${a.fingerprint}`;
      const opts = mode === 'alert-data-batch' ? { jobId: id } : { ...jobOptions(jobs[i]!), jobId: id };
      items.push({ jobKey: q.toKey(id), call: captureAdd(new Job(q, 'incident', DATA_PLACEHOLDER, opts, id), JSON.stringify(a)) });
    }
  } else {
    for (const j of jobs) {
      const n = queueFor(j);
      const q = await queue(n);
      const opts = mode === 'ours' || mode === 'ours-indexed' ? jobOptions(j) : { jobId: j.key };
      items.push({
        jobKey: q.toKey(j.key),
        call: captureAdd(new Job(q, j.runbook, DATA_PLACEHOLDER, opts, j.key), sealedJobText(sealer, n, j, 86_400_000)),
        ...(mode === 'ours-indexed' ? { member: index.member({ id: j.key, queue: n, runbook: j.runbook, node: jobNode(j) }) } : {}),
      });
    }
  }
  await batch.add(
    items,
    mode === 'ours-indexed'
      ? {
          key: index.key,
          keep: index.keep,
          at: Date.now(),
          onError: (err) => {
            throw err;
          },
        }
      : undefined,
  );
  return items.length;
};
const per: Record<string, number[]> = {};
for (const m of MODES) await add(m, [await group()]);
const rounds = Number(process.env['ROUNDS'] ?? 3);
for (let r = 0; r < rounds; r++)
  for (const m of MODES) {
    await admin.flushdb();
    const calls: G[][] = [];
    for (let g = 0; g < GROUPS; g += 4) calls.push(await Promise.all(Array.from({ length: 4 }, group)));
    // Queues made (and their scripts loaded) outside the measured part, as in a warm receiver.
    for (const c of calls) for (const g of c) for (const j of g.jobs) await queue(queueFor(j));
    const c0 = counter ? counter.total() : (await redisCpu(admin)).mainMs;
    let jobs = 0;
    let next = 0;
    // Not `jobs += await add(...)`: that reads `jobs` before the await, and four adders on their
    // way at once then lose each other's counts (what this bench printed before: per-job figures
    // divided by too few jobs, by a share that varied with the interleaving).
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < calls.length) {
          const n = await add(m, calls[next++]!);
          jobs += n;
        }
      }),
    );
    // Instructions per job in thousands, or microseconds of Redis's main thread per job.
    const spent = counter ? (counter.total() - c0) / 1000 : ((await redisCpu(admin)).mainMs - c0) * 1000;
    (per[m] ??= []).push(Math.round((spent * 10) / jobs) / 10);
  }
const sizes = await (async () => {
  const g = await group();
  const j = g.jobs[0]!;
  return { ours: sealedJobText(sealer, queueFor(j), j, 86_400_000).length, alert: JSON.stringify(g.alerts[0]).length };
})();
console.log('data bytes', sizes);
const unit = CALLGRIND ? 'thousand instructions of Redis per job' : 'us of Redis per job';
const ref = [...per['reference']!].sort((a, b) => a - b)[per['reference']!.length >> 1]!;
for (const m of MODES) {
  const v = per[m]!;
  const med = [...v].sort((a, b) => a - b)[v.length >> 1]!;
  console.log(m.padEnd(24), v.join(' / '), ' median', med, unit, `(${(med / ref).toFixed(2)}x the reference)`);
}
for (const q of queues.values()) await q.close();
conn.disconnect();
admin.disconnect();
await redis.destroy();
if (outDir) rmSync(outDir, { recursive: true, force: true });
