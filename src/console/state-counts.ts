import type { Queue } from 'bullmq';
import type { RedisConnection } from '../queues/redis.ts';
import { knownQueuesKey } from '../queues/known-queues.ts';

// Jobs by state over every queue, for the console's header. One small transaction per queue
// (BullMQ's getJobCounts: a length per state list), each on its own queue's slot, so it works
// on a Redis Cluster. The fleet's queues are many, so the answer is shared by every request for
// `ttlMs` and computed by one of them at a time; a page never waits for more than one round.

export const COUNTED_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed'] as const;
export type StateCounts = Record<(typeof COUNTED_STATES)[number], number>;

export class StateCounter {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #queue: (name: string) => Queue;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #last: { at: number; counts: StateCounts; queues: number } | undefined;
  #running: Promise<{ counts: StateCounts; queues: number }> | undefined;

  constructor(redis: RedisConnection, prefix: string, queue: (name: string) => Queue, ttlMs = 2_000, now: () => number = Date.now) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#queue = queue;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  async counts(): Promise<{ counts: StateCounts; queues: number }> {
    const last = this.#last;
    if (last && this.#now() - last.at < this.#ttlMs) return last;
    this.#running ??= this.#count().finally(() => { this.#running = undefined; });
    // A stale answer now beats a fresh one later: the next request gets the new one.
    if (last) {
      this.#running.catch(() => undefined);
      return last;
    }
    return this.#running;
  }

  async #count(): Promise<{ counts: StateCounts; queues: number }> {
    const names = await this.#redis.smembers(knownQueuesKey(this.#prefix));
    const counts = Object.fromEntries(COUNTED_STATES.map((s) => [s, 0])) as StateCounts;
    const per = await Promise.all(names.map((n) => this.#queue(n).getJobCounts(...COUNTED_STATES)));
    for (const c of per) for (const s of COUNTED_STATES) counts[s] += c[s] ?? 0;
    this.#last = { at: this.#now(), counts, queues: names.length };
    return this.#last;
  }
}
