import { Queue } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import { BullJobStore } from '../../../../src/adapters/jobstore/bull-job-store.ts';
import { queueStatsKey } from '../../../../src/adapters/stats/job-stats.ts';
import { connect } from '../../../../src/adapters/redis/redis.ts';
import type { RedisTarget } from '../../../../src/adapters/redis/redis-target.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { FinalError, PermanentError, RefusedError, TransientError } from '../../../../src/core/errors.ts';
import {
  JobParked,
  type ConsumeOptions,
  type JobConsumer,
  type JobConsumers,
  type JobEnqueue,
  type JobHandler,
  type JobStore,
  type TakenJob,
} from '../../../../src/core/jobs/job-store.ts';
import { redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { startCluster, startSentinelSet, topologiesAvailable, type LocalCluster, type LocalSentinelSet } from '../../../support/redis-topology.ts';
import { waitFor } from '../../../support/wait.ts';
import { MemoryJobStore } from '../../../testkit/memory-job-store.ts';

// The job store's contract: what the planes may rely on, whichever store holds the jobs. The
// same cases run on the in-memory fake and on BullMQ over Redis as a single server, under
// Sentinel and as a Cluster; a store passes them all or is not a JobStore.

interface Subject {
  store: JobStore;
  /** The way in for new work (unsealed here: sealing is the trust tests'). */
  enqueue: JobEnqueue;
  consumers: JobConsumers;
  /** What the counters sent with a log line added up to. */
  counter(key: string, field: string): Promise<number>;
  close(): Promise<void>;
}

const silent = pino({ level: 'silent' });
const PREFIX = uniquePrefix('jobstore');
const consuming = (queue: string): ConsumeOptions => ({ queue, lockDurationMs: 5_000, keepFinished: { age: 3_600 } });

let n = 0;
/** A new job for `node` (a unique key each call). */
function job(node = 'node-a'): RemediationJob {
  n += 1;
  return {
    version: 1,
    key: `contract-${process.pid}-${n}`,
    runbook: 'residual-multipath-cleanup',
    target: { node },
    evidence: [{ source: 'api', summary: 'contract', raw: null }],
  };
}

function redisSubject(target: RedisTarget | string): Subject {
  // The read side on a connection of its own, as the receiver holds it; the work side on the
  // agents' store, which opens and closes its own.
  const redis = connect(target, 'worker');
  const queues = new Map<string, Queue>();
  const queue = (name: string): Queue => {
    let q = queues.get(name);
    if (!q) queues.set(name, (q = new Queue(name, { connection: redis, prefix: PREFIX, skipVersionCheck: true })));
    return q;
  };
  const agents = new AgentStore({ redis: target, process: 'contract', prefix: PREFIX, log: silent });
  return {
    store: new BullJobStore({ redis, prefix: PREFIX, queue }),
    enqueue: agents.enqueuer({ timeoutMs: 5_000, sealer: undefined }),
    consumers: agents,
    counter: async (key, field) => Number((await redis.hget(key, field)) ?? 0),
    close: async () => {
      await agents.close();
      await Promise.all([...queues.values()].map((q) => q.close()));
      redis.disconnect();
    },
  };
}

function memorySubject(): Subject {
  const store = new MemoryJobStore();
  const consumers: JobConsumer[] = [];
  return {
    store,
    enqueue: store,
    consumers: {
      consume: (o, handler) => {
        const c = store.consume(o, handler);
        consumers.push(c);
        return c;
      },
    },
    counter: async (key, field) => store.counters.get(`${key}|${field}`) ?? 0,
    close: async () => {
      await Promise.all(consumers.map((c) => c.close()));
      store.close();
    },
  };
}

/** Runs until `queue`'s consumer has finished `count` attempts; gives what the handler saw. */
async function consumeUntil(s: Subject, queue: string, handler: JobHandler, count = 1): Promise<TakenJob[]> {
  const seen: TakenJob[] = [];
  let finished = 0;
  const c = s.consumers.consume(consuming(queue), async (j) => {
    seen.push(j);
    return handler(j);
  });
  c.onFinished(() => {
    finished += 1;
  });
  await c.ready();
  await waitFor(`${count} finished attempts on ${queue}`, async () => (finished >= count ? true : undefined), 15_000);
  await c.close();
  return seen;
}

function contract(name: string, make: () => Promise<Subject> | Subject, skip?: string): void {
  describe.skipIf(skip)(`the job store contract: ${name}`, () => {
    let s: Subject;
    beforeAll(async () => {
      s = await make();
    }, 120_000);
    afterAll(async () => {
      await s?.close();
    });

    it('stores a job waiting under its key, readable by state, get and find, once; unknown ids are unknown', async () => {
      const j = job();
      const q = nodeQueueName('node-a');
      await s.store.add(q, j, { ...j, sealed: 'x' });
      expect(await s.store.state(q, j.key)).toBe('waiting');
      expect(await s.store.get(q, j.key)).toMatchObject({
        id: j.key,
        name: j.runbook,
        data: { ...j, sealed: 'x' },
        attemptsMade: 0,
        attempts: 4,
      });
      expect(await s.store.find(j.key)).toMatchObject({ queue: q, state: 'waiting', job: { id: j.key } });
      expect(await s.store.state(q, 'no-such-job')).toBe('unknown');
      expect(await s.store.get(q, 'no-such-job')).toBeUndefined();
      expect(await s.store.find('no-such-job')).toBeUndefined();
      expect(
        await s.store.areIn('waiting', [
          { queue: q, id: j.key },
          { queue: q, id: 'no-such-job' },
        ]),
      ).toEqual([true, false]);
      await s.store.add(q, j, { ...j, key: 'other' });
      expect((await s.store.get(q, j.key))?.data).toEqual({ ...j, sealed: 'x' });
    });

    it('find() looks where it is told first, and a hint that is no queue of ours is ignored', async () => {
      const j = job('node-b');
      const q = nodeQueueName('node-b');
      await s.store.add(q, j, j);
      const asked: string[] = [];
      const found = await s.store.find(j.key, async (id) => {
        asked.push(id);
        return ['not a queue', q];
      });
      expect(asked).toEqual([j.key]);
      expect(found).toMatchObject({ queue: q, state: 'waiting' });
      expect(
        await s.store.find(j.key, async () => {
          throw new Error('no hints today');
        }),
      ).toMatchObject({ queue: q });
    });

    it('a consumer runs the job once; its result, log lines and counters are kept, in one call', async () => {
      const j = job('node-c');
      const q = nodeQueueName('node-c');
      await s.store.add(q, j, j);
      const stats = queueStatsKey(PREFIX, q);
      const seen = await consumeUntil(s, q, async (t) => {
        await t.log('first line');
        await t.log('second line', (b) => {
          b.hincrby(stats, 'ran|x|succeeded|1', 1);
          b.hincrby(stats, 'summs|x', 250);
        });
        return { outcome: 'succeeded', on: t.queue };
      });
      expect(seen.map((t) => [t.id, t.queue, t.attemptsMade, t.attempts])).toEqual([[j.key, q, 0, 4]]);
      expect(seen[0]?.data).toEqual(j);
      expect(await s.store.state(q, j.key)).toBe('completed');
      expect(await s.store.get(q, j.key)).toMatchObject({ returnvalue: { outcome: 'succeeded', on: q }, attemptsStarted: 1 });
      expect(await s.store.logs(q, j.key, 10)).toEqual({ lines: ['first line', 'second line'], count: 2 });
      expect(await s.store.logs(q, j.key, 1)).toEqual({ lines: ['first line'], count: 2 });
      expect([await s.counter(stats, 'ran|x|succeeded|1'), await s.counter(stats, 'summs|x')]).toEqual([1, 250]);
      expect(await s.store.areIn('completed', [{ queue: q, id: j.key }])).toEqual([true]);
    });

    it('ends at once on a refusal or a permanent error, named; on a FinalError with its words as they are', async () => {
      const q = nodeQueueName('node-d');
      const cases: [RemediationJob, Error, string][] = [
        [job('node-d'), new RefusedError(['not ours']), 'RefusedError: refused: not ours'],
        [job('node-d'), new PermanentError('bad data'), 'PermanentError: bad data'],
        [job('node-d'), new FinalError('untrusted work refused (bad-mac): nothing was run'), 'untrusted work refused (bad-mac): nothing was run'],
      ];
      for (const [j] of cases) await s.store.add(q, j, j);
      await consumeUntil(
        s,
        q,
        async (t) => {
          throw cases.find(([j]) => j.key === t.id)![1];
        },
        cases.length,
      );
      for (const [j, , reason] of cases) {
        expect(await s.store.state(q, j.key)).toBe('failed');
        expect(await s.store.get(q, j.key)).toMatchObject({ failedReason: reason, attemptsMade: 1 });
      }
    });

    it('keeps a transient failure for another attempt (delayed by its backoff), with the reason', async () => {
      const j = job('node-e');
      const q = nodeQueueName('node-e');
      await s.store.add(q, j, j);
      await consumeUntil(s, q, async () => {
        throw new TransientError('multipathd did not answer');
      });
      expect(await s.store.state(q, j.key)).toBe('delayed');
      expect(await s.store.get(q, j.key)).toMatchObject({ attemptsMade: 1, failedReason: 'multipathd did not answer' });
    });

    it('parks a job with its progress and log, uses no attempt, and promote() runs it again now', async () => {
      const j = job('node-f');
      const q = nodeQueueName('node-f');
      await s.store.add(q, j, j);
      let runs = 0;
      let finished = 0;
      const c = s.consumers.consume(consuming(q), async (t) => {
        runs += 1;
        if (runs === 1) {
          await t.setProgress({ parked: { reason: 'approval' } });
          await t.log('waiting for an approval');
          return t.park(Date.now() + 600_000);
        }
        return { progress: t.progress, attemptsMade: t.attemptsMade };
      });
      c.onFinished(() => {
        finished += 1;
      });
      await c.ready();
      await waitFor('parked', async () => ((await s.store.state(q, j.key)) === 'delayed' ? true : undefined), 15_000);
      expect(await s.store.get(q, j.key)).toMatchObject({ progress: { parked: { reason: 'approval' } }, attemptsMade: 0 });
      expect((await s.store.logs(q, j.key, 10)).lines).toEqual(['waiting for an approval']);
      expect(await s.store.areIn('delayed', [{ queue: q, id: j.key }])).toEqual([true]);
      expect(finished).toBe(0);
      expect(await s.store.promote(q, j.key)).toBe(true);
      await waitFor('ran again', async () => (finished === 1 ? true : undefined), 15_000);
      await c.close();
      expect(await s.store.get(q, j.key)).toMatchObject({ returnvalue: { progress: { parked: { reason: 'approval' } }, attemptsMade: 0 } });
      expect(await s.store.promote(q, j.key)).toBe(false);
      expect(await s.store.promote(q, 'no-such-job')).toBe(false);
    });

    it('enqueue stores each job on its queue once, under its key: a repeat is answered deduplicated, and the job is then consumed', async () => {
      const [a, b] = [job('node-g'), job('node-g')];
      const q = nodeQueueName('node-g');
      const answer = (j: RemediationJob, deduplicated: boolean) => ({ id: j.key, queue: q, runbook: j.runbook, node: 'node-g', key: j.key, deduplicated });
      expect(s.enqueue.allKnown([{ queue: q, key: a.key }])).toBe(false);
      expect(await s.enqueue.enqueue([a, b, a])).toEqual([answer(a, false), answer(b, false), answer(a, true)]);
      expect(await s.enqueue.enqueue([b])).toEqual([answer(b, true)]);
      expect(
        s.enqueue.allKnown([
          { queue: q, key: a.key },
          { queue: q, key: b.key },
        ]),
      ).toBe(true);
      expect(s.enqueue.allKnown([{ queue: q, key: 'no-such-job' }])).toBe(false);
      expect(s.enqueue.allKnown([])).toBe(false);
      expect(await s.store.find(a.key)).toMatchObject({ queue: q, state: 'waiting', job: { id: a.key, name: a.runbook, data: a, attempts: 4 } });
      const seen = await consumeUntil(s, q, async (t) => ({ ran: t.id }), 2);
      expect(seen.map((t) => [t.id, t.data])).toEqual([
        [a.key, a],
        [b.key, b],
      ]);
      expect(await s.store.get(q, a.key)).toMatchObject({ returnvalue: { ran: a.key } });
      expect(await s.enqueue.enqueue([a])).toEqual([answer(a, true)]);
      expect(await s.store.state(q, a.key)).toBe('completed');
    });

    it('refuses to list a state it cannot ask about', async () => {
      await expect(s.store.areIn('waiting-children', [{ queue: nodeQueueName('node-a'), id: 'x' }])).rejects.toThrow(/cannot list/);
    });

    it("lets JobParked through as the consumer's own signal, never as a failure", () => {
      expect(new JobParked()).toBeInstanceOf(Error);
    });
  });
}

const topologies = topologiesAvailable();
let sentinel: LocalSentinelSet | undefined;
let cluster: LocalCluster | undefined;
afterAll(() => {
  sentinel?.stop();
  cluster?.stop();
});

contract('in memory (test/testkit)', () => memorySubject());
contract('BullMQ on a single Redis', () => redisSubject(redisUrl()));
contract(
  'BullMQ under Sentinel',
  async () => {
    sentinel = await startSentinelSet();
    return redisSubject({
      kind: 'sentinel',
      sentinels: sentinel.sentinels.map((port) => ({ host: '127.0.0.1', port })),
      name: sentinel.name,
    });
  },
  topologies,
);
contract(
  'BullMQ on a Cluster',
  async () => {
    cluster = await startCluster();
    return redisSubject({ kind: 'cluster', nodes: cluster.nodes });
  },
  topologies,
);
