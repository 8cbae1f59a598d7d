import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeQueueName, CLUSTER_QUEUE } from '../../../../src/core/catalogue/queues.ts';
import { queueDepthExposition, queueDepths } from '../../../../src/adapters/jobstore/queue-depth.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// volume_medic_queue_jobs counts what BullMQ itself counts on each known queue (waiting includes
// prioritized and paused jobs), and says nothing about queues without jobs.

const prefix = uniquePrefix('qdepth');
const redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
const queues: Queue[] = [];
afterAll(async () => {
  for (const q of queues) await q.close();
  await redis.quit();
  await dropPrefix(prefix);
});

const queue = (name: string): Queue => {
  const q = new Queue(name, { connection: redis, prefix });
  queues.push(q);
  return q;
};

describe("queue depth from BullMQ's keys", () => {
  it('counts waiting, prioritized, delayed and active jobs as BullMQ does; idle queues have no series', async () => {
    const busy = queue(nodeQueueName('worker-busy'));
    const idle = queue(nodeQueueName('worker-idle'));
    const cluster = queue(CLUSTER_QUEUE);
    await redis.sadd(knownQueuesKey(prefix), busy.name, idle.name, cluster.name);
    await busy.add('a', {});
    await busy.add('b', {});
    await busy.add('c', {}, { priority: 5 });
    await busy.add('d', {}, { delay: 3_600_000 });
    await cluster.add('e', {});
    // One job taken by a worker that holds it: active.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const taken = new Promise<void>((r) => (started = r));
    const worker = new Worker(
      cluster.name,
      async () => {
        started();
        await held;
      },
      { connection: new Redis(redisUrl(), { maxRetriesPerRequest: null }), prefix },
    );
    await cluster.add('f', {});
    await taken;
    try {
      const depths = await queueDepths(redis, prefix);
      const bull = await busy.getJobCounts('waiting', 'prioritized', 'paused', 'active', 'delayed');
      expect(depths.get(busy.name)).toEqual({
        waiting: bull['waiting']! + bull['prioritized']! + bull['paused']!,
        active: bull['active'],
        delayed: bull['delayed'],
      });
      expect(depths.get(busy.name)).toEqual({ waiting: 3, active: 0, delayed: 1 });
      expect(depths.get(cluster.name)).toEqual({ waiting: 1, active: 1, delayed: 0 });
      expect(depths.has(idle.name)).toBe(false);
      const text = queueDepthExposition(depths);
      expect(text).toContain('volume_medic_queue_jobs{queue="vm-node-{worker-busy}",node="worker-busy",state="waiting"} 3');
      expect(text).toContain('volume_medic_queue_jobs{queue="vm-node-{worker-busy}",node="worker-busy",state="delayed"} 1');
      expect(text).toContain('volume_medic_queue_jobs{queue="vm-cluster-{cluster}",state="active"} 1');
      expect(text).not.toContain('worker-idle');
    } finally {
      release();
      await worker.close();
      await worker.disconnect();
    }
  });

  it('fails the reading rather than report a wrong zero when Redis refuses a count (an ACL without LLEN)', async () => {
    const user = `qdepth-${randomBytes(4).toString('hex')}`;
    await redis.call('ACL', 'SETUSER', user, 'on', '>qdepth-password-0123', `~${prefix}:*`, '+@all', '-llen');
    const limited = new Redis(redisUrl(), { username: user, password: 'qdepth-password-0123', maxRetriesPerRequest: 1 });
    try {
      await expect(queueDepths(limited, prefix)).rejects.toThrow(/NOPERM/);
    } finally {
      await limited.quit();
      await redis.call('ACL', 'DELUSER', user);
    }
  });
});
