import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { knownQueuesKey } from '../../adapters/redis/known-queues.ts';
import { CachedRead } from './cached-read.ts';
import { scanQueues, type QueueScan, type ScanOptions } from '../../adapters/jobstore/queue-scan.ts';

// One scan of every known queue (queue-scan.ts), shared by every console request for `ttlMs` and
// at least 10x its duration (cached-read.ts): the counts in the incidents view's header, the fleet
// overview and their JSON read the same snapshot (a scan's cost at 5,000 queues: bench/README.md,
// "Figures behind the code").

export interface FleetSnapshot {
  /** When the scan finished (ms). */
  at: number;
  /** How long it took (ms). */
  tookMs: number;
  queues: QueueScan[];
}

export class FleetSnapshots {
  readonly #read: CachedRead<FleetSnapshot>;

  constructor(redis: RedisConnection, prefix: string, o: { ttlMs?: number; now?: () => number; scan?: ScanOptions } = {}) {
    const now = o.now ?? Date.now;
    this.#read = new CachedRead(
      async () => {
        const started = now();
        const names = (await redis.smembers(knownQueuesKey(prefix))).sort();
        const queues = await scanQueues(redis, prefix, names, o.scan ?? {});
        const at = now();
        return { at, tookMs: at - started, queues };
      },
      { ttlMs: o.ttlMs ?? 2_000, now },
    );
  }

  async get(): Promise<FleetSnapshot> {
    return (await this.#read.get()).value;
  }
}
