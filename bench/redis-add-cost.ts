// What storing one new job costs Redis, alone on the machine (no receiver, no load generator):
// the `redis` section of `npm run bench`, or `node bench/redis-add-cost.ts` on its own (a private
// redis-server). redis-server's main-thread CPU (INFO cpu) per job while the jobs of new 50-alert
// groups (the bench's payload, parsed and triaged as the receiver does) are added three ways, in
// alternating rounds:
//   dispatcher  the receiver's Dispatcher (src/adapters/jobstore/dispatcher.ts): BullMQ's add script once per
//               job inside one script call per batch (batch-add.ts), known-key memory off;
//   addBulk     BullMQ's Queue.addBulk with the same jobs and options: one EVALSHA per job, pipelined;
//   reference   Queue.addBulk as the bench's plain-addBulk server does it: the raw alert as data,
//               its fingerprint as id, no other options.
// Redis runs every script on its one main thread, so 1e6 / (us per job) is the most new jobs per
// second one Redis can store, whichever receiver sends them: the bound issue 8's grouped target
// (60,000 new alerts/s on 2 cores) meets. COST_GROUPS (default 400) groups per round, COST_PER_CALL (4)
// groups per add, COST_ROUNDS (3) rounds (GROUPS is taken: bash keeps its group ids in it).
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { AlertmanagerPayload, alertmanagerSignals } from '../src/control/sources/alertmanager.ts';
import { triage } from '../src/control/triage/triage.ts';
import { InMemoryLookups } from '../src/adapters/kube/lookups.ts';
import { Dispatcher } from '../src/adapters/jobstore/dispatcher.ts';
import { jobOptions } from '../src/adapters/jobstore/store-pipeline.ts';
import { queueFor } from '../src/core/catalogue/queues.ts';
import type { RemediationJob } from '../src/core/catalogue/jobs.ts';
import { fill, groupedAlerts } from '../test/testkit/load-payloads.ts';
import { startPrivateRedis } from '../test/support/redis-server.ts';
import { redisCpu } from './lib/redis-cpu.ts';
import { median, round } from './lib/stats.ts';
import { randomBytes } from 'node:crypto';
import { keyringFor } from '../src/core/trust/keyring.ts';
import { sealerOf } from '../src/core/trust/seal.ts';

// Jobs are sealed as the receiver seals them: the cost is part of ours.
const BENCH_SEALER = sealerOf(keyringFor('receiver', new Map([['receiver.bench', randomBytes(32)]])));

const PREFIX = 'cost';
export const MODES = ['dispatcher', 'addBulk', 'reference'] as const;
export type Mode = (typeof MODES)[number];

export interface AddCostRow {
  mode: Mode;
  /** Redis main-thread CPU per job in each round, us. */
  rounds: number[];
  medianUs: number;
  /** 1e6 / medianUs: new jobs per second one Redis can store this way. */
  maxJobsPerSecond: number;
}

interface Group {
  jobs: RemediationJob[];
  alerts: { fingerprint: string }[];
}

/** Measures on the Redis at `url`, which it flushes: give it a private one. */
export async function redisAddCost(url: string, opts: { groups?: number; perCall?: number; rounds?: number; inFlight?: number } = {}): Promise<AddCostRow[]> {
  const groupsPerRound = opts.groups ?? 400;
  const perCall = opts.perCall ?? 4;
  const rounds = opts.rounds ?? 3;
  const inFlight = opts.inFlight ?? 4;
  const conn = new Redis(url, { maxRetriesPerRequest: null });
  const admin = new Redis(url);
  const payload = groupedAlerts(50);
  const recovery = { nodeRecoveryAlerts: new Set(['KubeNodeNotReady', 'KubeNodeUnreachable']) };
  const salt = Date.now().toString(36);
  let serial = 0;
  /** A new group, and the jobs the receiver makes of it. */
  const group = async (): Promise<Group> => {
    const body = AlertmanagerPayload.parse(JSON.parse(fill(payload, `${salt}c${serial++}`)));
    const { jobs } = await triage(alertmanagerSignals(body, recovery).signals, { lookups: new InMemoryLookups() });
    return { jobs, alerts: body.alerts };
  };
  const queues = new Map<string, Queue>();
  const queue = async (name: string): Promise<Queue> => {
    let q = queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: conn, prefix: PREFIX });
      queues.set(name, q);
      await q.client;
    }
    return q;
  };
  const dispatcher = new Dispatcher(conn, { prefix: PREFIX, timeoutMs: 30_000, knownKeyMaxMs: 0, sealer: BENCH_SEALER });
  const add = async (mode: Mode, groups: Group[]): Promise<number> => {
    if (mode === 'dispatcher') return (await dispatcher.enqueue(groups.flatMap((g) => g.jobs))).length;
    if (mode === 'reference') {
      const alerts = groups.flatMap((g) => g.alerts);
      await (await queue('addbulk')).addBulk(alerts.map((a) => ({ name: 'incident', data: a, opts: { jobId: `alert-${a.fingerprint}` } })));
      return alerts.length;
    }
    const byQueue = new Map<string, RemediationJob[]>();
    for (const j of groups.flatMap((g) => g.jobs)) {
      const list = byQueue.get(queueFor(j));
      if (list) list.push(j);
      else byQueue.set(queueFor(j), [j]);
    }
    await Promise.all(
      [...byQueue].map(async ([name, jobs]) => (await queue(name)).addBulk(jobs.map((j) => ({ name: j.runbook, data: j, opts: jobOptions(j) })))),
    );
    return [...byQueue.values()].reduce((a, js) => a + js.length, 0);
  };
  const perJob: Record<Mode, number[]> = { dispatcher: [], addBulk: [], reference: [] };
  try {
    // Warm: every queue's scripts loaded, the JIT on our side.
    for (const mode of MODES) await add(mode, [await group()]);
    for (let r = 0; r < rounds; r++) {
      for (const mode of MODES) {
        await admin.flushdb();
        dispatcher.forget();
        // Built before the clock starts: only the adds are measured.
        const calls: Group[][] = [];
        for (let g = 0; g < groupsPerRound; g += perCall) calls.push(await Promise.all(Array.from({ length: perCall }, group)));
        const c0 = (await redisCpu(admin)).mainMs;
        // `inFlight` adds on their way at once, so Redis always has the next one queued: a Redis
        // that idles between calls is charged for waking up (on a VM, about a third more CPU per
        // job measured here), which is not the cost of storing a job.
        let jobs = 0;
        let next = 0;
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (next < calls.length) {
              const added = await add(mode, calls[next++]!);
              jobs += added;
            }
          }),
        );
        const spent = (await redisCpu(admin)).mainMs - c0;
        perJob[mode].push(round((spent * 1000) / jobs, 1));
      }
    }
    await admin.flushdb();
  } finally {
    await dispatcher.close();
    for (const q of queues.values()) await q.close();
    conn.disconnect();
    admin.disconnect();
  }
  return MODES.map((mode) => ({
    mode,
    rounds: perJob[mode],
    medianUs: median(perJob[mode]),
    maxJobsPerSecond: Math.floor(1e6 / median(perJob[mode])),
  }));
}

export const addCostTable = (rows: readonly AddCostRow[]) =>
  rows.map((r) => ({
    mode: r.mode,
    'us per job (rounds)': r.rounds.join(' / '),
    'median us': r.medianUs,
    'at most jobs/s on one Redis': r.maxJobsPerSecond,
  }));

if (import.meta.main) {
  const count = (name: string, dflt: number): number => {
    const v = Number(process.env[name] ?? dflt);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a whole number >= 1, got ${process.env[name]}`);
    return v;
  };
  const opts = { groups: count('COST_GROUPS', 400), perCall: count('COST_PER_CALL', 4), rounds: count('COST_ROUNDS', 3) };
  const redis = await startPrivateRedis();
  try {
    const rows = await redisAddCost(redis.url, opts);
    console.log(`Redis main-thread CPU per new job, ${opts.groups} groups of 50 alerts per round, ${opts.perCall} groups per add, ${opts.rounds} rounds`);
    console.table(addCostTable(rows));
  } finally {
    await redis.destroy();
  }
}
