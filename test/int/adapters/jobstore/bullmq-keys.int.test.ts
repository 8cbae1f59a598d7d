import { Queue, Worker } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { STATE_PLACES, queueKeys, type PlacedState } from '../../../../src/adapters/jobstore/bullmq-keys.ts';
import { producerConnection, workerConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// Our scripts read BullMQ's keys by name (src/adapters/jobstore/bullmq-keys.ts). This holds the names to the
// installed BullMQ: its own toKey, and where real jobs in each state really are.

describe("BullMQ's key layout as src/adapters/jobstore/bullmq-keys.ts names it", () => {
  const prefix = uniquePrefix('bullkeys');
  const name = nodeQueueName('keys-a');
  const connection = producerConnection(redisUrl());
  const queue = new Queue(name, { connection, prefix });
  afterAll(async () => {
    await queue.close();
    connection.disconnect();
    await dropPrefix(prefix);
  });

  it("names the same keys as BullMQ's toKey", () => {
    const k = queueKeys(prefix, name);
    for (const [state, place] of Object.entries(STATE_PLACES)) expect(k.state(state as PlacedState)).toBe(queue.toKey(place.suffix));
    expect(k.stalledCheck).toBe(queue.toKey('stalled-check'));
    expect(k.job('j1')).toBe(queue.toKey('j1'));
    expect(k.logs('j1')).toBe(queue.toKey('j1:logs'));
    expect(k.marker).toBe(queue.toKey('marker'));
    expect(k.marker).toBe(queue.keys.marker);
    expect(
      Object.keys(queue.keys)
        .filter((s) => s !== '' && Object.values(STATE_PLACES).some((p) => p.suffix === s))
        .sort(),
    ).toEqual(
      Object.values(STATE_PLACES)
        .map((p) => p.suffix)
        .sort(),
    );
  });

  it('finds real jobs where it says each state is', async () => {
    const k = queueKeys(prefix, name);
    await queue.add('w', {}, { jobId: 'waits' });
    await queue.add('d', {}, { jobId: 'later', delay: 3_600_000 });
    await queue.add('p', {}, { jobId: 'prio', priority: 5 });
    expect(await connection.lpos(k.wait, 'waits')).not.toBeNull();
    expect(await connection.zscore(k.prioritized, 'prio')).not.toBeNull();
    expect(await connection.exists(k.job('waits'))).toBe(1);
    const worker = new Worker(
      name,
      async (job) => {
        if (job.id === 'bad') throw new Error('no');
        return 'ok';
      },
      { connection: workerConnection(redisUrl()), prefix, autorun: false },
    );
    // Paused, new jobs wait in the paused list; resumed, the worker finishes two (and the others).
    await queue.pause();
    await queue.add('c', {}, { jobId: 'good' });
    await queue.add('f', {}, { jobId: 'bad' });
    const r = connection;
    expect(await r.lpos(k.paused, 'good')).not.toBeNull();
    await queue.resume();
    worker.run();
    await waitFor('two finished', async () =>
      (await r.zscore(k.completed, 'good')) !== null && (await r.zscore(k.failed, 'bad')) !== null ? true : undefined,
    );
    await worker.close();
    expect(await r.zscore(k.delayed, 'later')).not.toBeNull();
    expect(await queue.getJobState('later')).toBe('delayed');
  });
});
