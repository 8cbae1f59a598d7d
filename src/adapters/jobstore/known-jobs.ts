import { GenerationalMap } from '../../core/collections/generational-map.ts';

// Known keys: a key this process stored or saw stored is answered "deduplicated" from memory for
// a while, with no round trip (dispatcher.ts). `rememberUntil` says why that is safe and how long.

/**
 * Margin for clocks: a job's age on retention is measured by the finishing worker's clock from
 * its finishedOn, our bound uses the job's timestamp written by a receiver's clock.
 */
const CLOCK_SKEW_MARGIN_MS = 60_000;

export interface KnownJobsOptions {
  /** Longest time a known key is answered from memory; 0 turns the known-key answer off. */
  maxMs: number;
  /** At most this many keys are remembered: the newest half always, older ones while there is room (GenerationalMap). */
  limit: number;
  /** The dedup window of the jobs on a queue: what its worker keeps them for (catalogue/policy.ts). */
  windowMs(queueName: string): number;
  now(): number;
}

interface Known {
  queue: string;
  until: number;
}

export class KnownJobs {
  /**
   * key -> its queue and until when (epoch ms) that job is certainly still stored. By the key
   * alone, the queue compared on lookup: the key string is the job's own, whose hash V8 keeps,
   * where a queue + key string was built and hashed twice per new job. A key known on another
   * queue is simply not known.
   */
  readonly #known: GenerationalMap<string, Known>;
  readonly #o: KnownJobsOptions;

  constructor(o: KnownJobsOptions) {
    this.#o = o;
    this.#known = new GenerationalMap(Math.max(0, o.limit));
  }

  /** Whether the job `key` on `queueName` is certainly stored now. */
  has(queueName: string, key: string): boolean {
    if (this.#known.size === 0) return false;
    const k = this.#known.get(key);
    if (k === undefined || k.queue !== queueName) return false;
    if (this.#o.now() >= k.until) {
      this.#known.delete(key);
      return false;
    }
    return true;
  }

  /** The job `key` was stored on `queueName` at `storedAt` (epoch ms), by this process or another. */
  remember(queueName: string, key: string, storedAt: number): void {
    if (this.#o.maxMs <= 0 || !Number.isFinite(storedAt)) return;
    const until = this.#rememberUntil(queueName, storedAt);
    if (until <= this.#o.now()) return;
    this.#known.set(key, { queue: queueName, until });
  }

  clear(): void {
    this.#known.clear();
  }

  /**
   * Until when a job stored at `storedAt` is certainly still in Redis, as far as retention goes.
   * BullMQ removes finished jobs by age, counted from their finishedOn (>= the time they were
   * stored); the worker finishing a job sweeps its WHOLE queue's completed/failed set with the
   * queue's window (`queueWindowMs`, the same DEDUP_WINDOW_SECONDS: one ConfigMap for every
   * component). A margin covers the clocks of the receivers and workers involved.
   *
   * What this cannot see, and why the answer from memory is further capped by `maxMs`:
   * someone deleting the job (Job.remove, Queue.clean/drain/obliterate, the operator
   * dashboard), FLUSHDB, and Redis losing data without this connection dropping (a dropped
   * connection forgets everything). Those are deliberate or catastrophic; the cap bounds how
   * long a repeat is folded into a job that is no longer there.
   */
  #rememberUntil(queueName: string, storedAt: number): number {
    return Math.min(storedAt + this.#o.windowMs(queueName) - CLOCK_SKEW_MARGIN_MS, this.#o.now() + this.#o.maxMs);
  }
}
