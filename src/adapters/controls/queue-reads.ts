import type { RedisConnection } from '../redis/redis.ts';
import { execAll } from '../redis/exec-all.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';

// One read of the same kind from many queues' keys (each queue's parked hash, each queue's audit
// list), for the readers that merge what every worker wrote under its own queue. On a single
// Redis: pipelines of `chunk` commands (one round trip each), `parallel` in flight. On a Cluster
// each queue's keys carry its own hash tag (another slot, maybe another master), and an ioredis
// Cluster pipeline must stay in one slot: one command per queue instead, `parallel` in flight
// (as src/adapters/jobstore/queue-scan.ts does with its script).

export type QueueRead = { cmd: 'hgetall' } | { cmd: 'lrange'; count: number };

/** The replies, in the order of `keys`. An unreadable answer throws: no half view shown as whole. */
export async function readEach(
  redis: RedisConnection,
  keys: readonly string[],
  read: QueueRead,
  o: { chunk?: number; parallel?: number } = {},
): Promise<unknown[]> {
  return inLanes(keys, laneShape(redis, o, { chunk: 500, parallel: 4 }), async (ks) => {
    if (ks.length === 1) {
      const k = ks[0]!;
      return [read.cmd === 'hgetall' ? await redis.hgetall(k) : await redis.lrange(k, 0, read.count - 1)];
    }
    const p = redis.pipeline();
    for (const k of ks) {
      if (read.cmd === 'hgetall') p.hgetall(k);
      else p.lrange(k, 0, read.count - 1);
    }
    return execAll(p);
  });
}

/** The known queues (src/adapters/redis/known-queues.ts), sorted: whose lists and hashes the readers merge. */
export async function knownQueueNames(redis: RedisConnection, prefix: string): Promise<string[]> {
  return (await redis.smembers(knownQueuesKey(prefix))).sort();
}
