import type { RedisConnection } from '../queues/redis.ts';
import { execAll } from '../queues/exec-all.ts';

// One read of the same kind from many queues' keys (each queue's parked hash, each queue's audit
// list), for the readers that merge what every worker wrote under its own queue. On a single
// Redis: pipelines of `chunk` commands (one round trip each), `parallel` in flight. On a Cluster
// each queue's keys carry its own hash tag (another slot, maybe another master), and an ioredis
// Cluster pipeline must stay in one slot: one command per queue instead, `parallel` in flight
// (as src/console/queue-scan.ts does with its script).

export type QueueRead = { cmd: 'hgetall' } | { cmd: 'lrange'; count: number };

const isCluster = (r: RedisConnection): boolean => (r as { isCluster?: boolean }).isCluster === true;

/** The replies, in the order of `keys`. An unreadable answer throws: no half view shown as whole. */
export async function readEach(redis: RedisConnection, keys: readonly string[], read: QueueRead, o: { chunk?: number; parallel?: number } = {}): Promise<unknown[]> {
  const chunk = isCluster(redis) ? 1 : Math.max(1, o.chunk ?? 500);
  const parallel = Math.max(1, o.parallel ?? (isCluster(redis) ? 32 : 4));
  const chunks: string[][] = [];
  for (let i = 0; i < keys.length; i += chunk) chunks.push(keys.slice(i, i + chunk));
  const out: unknown[][] = new Array(chunks.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < chunks.length) {
      const i = next++;
      const ks = chunks[i]!;
      if (ks.length === 1) {
        const k = ks[0]!;
        out[i] = [read.cmd === 'hgetall' ? await redis.hgetall(k) : await redis.lrange(k, 0, read.count - 1)];
        continue;
      }
      const p = redis.pipeline();
      for (const k of ks) {
        if (read.cmd === 'hgetall') p.hgetall(k);
        else p.lrange(k, 0, read.count - 1);
      }
      out[i] = await execAll(p);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, lane));
  return out.flat();
}
