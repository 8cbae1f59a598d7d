import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { dedupWindows } from '../../../../src/core/config/derived.ts';

// The dedup window holds in both directions. Inside it a repeat folds into the job; after it a
// repeat is a new incident, even on a quiet queue where BullMQ has not swept the finished job
// yet (it removes finished jobs by age only when another job on the same queue finishes): one
// outage's job must not swallow the next outage of the same node hours later (issue 22's
// correlation keys an outage by node + boot, so a partition without a reboot repeats a key).

const NODE = 'worker-expiry';
const job = (key: string): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node: NODE },
  evidence: [{ source: 'api', summary: 'test', raw: null }],
});

describe('a finished job older than its dedup window', () => {
  const prefix = uniquePrefix('expiry');
  let redis: RedisConnection;
  let queue: Queue;
  let d: Dispatcher;

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    queue = new Queue(nodeQueueName(NODE), { connection: producerConnection(redisUrl()), prefix });
    // A 1 s window; no answers from memory, so every repeat asks Redis.
    d = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), dedupWindowMs: dedupWindows(1), knownKeyMaxMs: 0 });
  });
  afterAll(async () => {
    await d.close();
    await queue.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  const finish = async (key: string): Promise<number> => {
    const w = new Worker(queue.name, async () => 'done', {
      connection: new Redis(redisUrl(), { maxRetriesPerRequest: null }),
      prefix,
      skipVersionCheck: true,
    });
    try {
      return await waitFor(`job ${key} finished`, async () => (await queue.getJob(key))?.finishedOn, 10_000);
    } finally {
      await w.close();
    }
  };

  it('folds a repeat while the job waits, and within the window after it finished; stores a new job after it', async () => {
    const key = 'expiry_a_000000000001';
    expect((await d.enqueue([job(key)]))[0]!.deduplicated).toBe(false);
    await new Promise((r) => setTimeout(r, 1_200));
    // Created before the window began but not finished: still the same incident.
    expect((await d.enqueue([job(key)]))[0]!.deduplicated).toBe(true);

    const finishedOn = await finish(key);
    expect((await d.enqueue([job(key)]))[0]!.deduplicated).toBe(true);
    expect(await queue.getJobState(key)).toBe('completed');

    await new Promise((r) => setTimeout(r, Math.max(0, finishedOn + 1_100 - Date.now())));
    const [again] = await d.enqueue([job(key)]);
    expect(again!.deduplicated).toBe(false);
    const fresh = await queue.getJob(key);
    expect(await queue.getJobState(key)).toBe('waiting');
    expect(fresh!.finishedOn).toBeUndefined();
    expect(fresh!.timestamp).toBeGreaterThan(finishedOn);
    // And the new job folds its own repeats again.
    expect((await d.enqueue([job(key)]))[0]!.deduplicated).toBe(true);
    expect(await queue.getJobCounts('waiting', 'completed')).toMatchObject({ waiting: 1, completed: 0 });
  });
});
