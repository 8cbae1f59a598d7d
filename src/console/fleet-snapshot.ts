import type { RedisConnection } from '../queues/redis.ts';
import { knownQueuesKey } from '../queues/known-queues.ts';
import { scanQueues, type QueueScan, type ScanOptions } from './queue-scan.ts';

// One scan of every known queue (queue-scan.ts), shared by every console request for `ttlMs`:
// the counts in the incidents view's header, the fleet overview and their JSON read the same
// snapshot. One request at a time computes it; while a newer one is computed the others get the
// last one (a page never waits for a scan except the very first), so a page's own work stays
// bounded whatever the fleet's size. A scan that takes long is taken less often: a snapshot
// lives at least `ttlMs` and at least 10x its scan's duration, so scanning keeps under a tenth of
// the time (5,000 queues: ~40 ms of the receiver's CPU and ~50 ms of Redis's per scan).

export interface FleetSnapshot {
  /** When the scan finished (ms). */
  at: number;
  /** How long it took (ms). */
  tookMs: number;
  queues: QueueScan[];
}

export class FleetSnapshots {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #scan: ScanOptions;
  #last: FleetSnapshot | undefined;
  #running: Promise<FleetSnapshot> | undefined;

  constructor(redis: RedisConnection, prefix: string, o: { ttlMs?: number; now?: () => number; scan?: ScanOptions } = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#ttlMs = o.ttlMs ?? 2_000;
    this.#now = o.now ?? Date.now;
    this.#scan = o.scan ?? {};
  }

  async get(): Promise<FleetSnapshot> {
    const last = this.#last;
    if (last && this.#now() - last.at < Math.max(this.#ttlMs, 10 * last.tookMs)) return last;
    this.#running ??= this.#take().finally(() => { this.#running = undefined; });
    // A stale answer now beats a fresh one later: the next request gets the new one.
    if (last) {
      this.#running.catch(() => undefined);
      return last;
    }
    return this.#running;
  }

  async #take(): Promise<FleetSnapshot> {
    const started = this.#now();
    const names = (await this.#redis.smembers(knownQueuesKey(this.#prefix))).sort();
    const queues = await scanQueues(this.#redis, this.#prefix, names, this.#scan);
    const at = this.#now();
    this.#last = { at, tookMs: at - started, queues };
    return this.#last;
  }
}
