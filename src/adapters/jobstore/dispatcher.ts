import type { Queue } from 'bullmq';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import { queueWindowMs } from '../../core/catalogue/policy.ts';
import type { DedupWindows } from '../../core/config/derived.ts';
import { placementOfQueue, queueFor } from '../../core/catalogue/queues.ts';
import { MicroBatcher } from '../../core/collections/micro-batcher.ts';
import { type Enqueued, type JobEnqueue, StoreUnavailableError } from '../../core/jobs/job-store.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { KnownJobs } from './known-jobs.ts';
import { enqueuedAnswer, type PendingJob, StorePipeline, type StorePipelineOptions } from './store-pipeline.ts';

// Puts triaged jobs on their queues. The job id IS the idempotency key, so BullMQ itself folds a
// repeat into the existing job for as long as that job is kept; completed and failed jobs are
// kept for the runbook's deduplication window, which is what makes the window hold.
//
// Hot path. Three things keep Redis work per webhook small:
// 1. Coalescing: concurrent requests for the same key share one store (`inFlight`, here).
// 2. Batching: every job asked for in one turn of the event loop goes out in ONE script call
//    (the MicroBatcher, src/core/collections/micro-batcher.ts, into store-pipeline.ts and
//    batch-add.ts): one round trip for all requests of that turn.
// 3. Known keys: a key this process stored or saw stored is answered "deduplicated" from memory
//    for a while, with no round trip (known-jobs.ts says why that is safe and how long).

/** The store pipeline's options (StorePipelineOptions: prefix, sealing, queue registry, index, replicas) and these. */
export interface DispatcherOptions extends StorePipelineOptions {
  timeoutMs: number;
  /** Each placement's window (the configuration's dedupWindowMs); default the runbooks' own. */
  dedupWindowMs?: DedupWindows;
  /**
   * Longest time a known key is answered from memory (default 60 s). Bounds what the known-key
   * answer cannot see: an operator deleting the job, or Redis losing data while connected.
   * 0 turns the known-key answer off.
   */
  knownKeyMaxMs?: number;
  /**
   * At most this many known keys are remembered (default 100,000): the newest half always, older
   * ones while there is room (GenerationalMap).
   */
  knownKeyLimit?: number;
  now?: () => number;
}

/**
 * Script calls on their way at once. Two keep Redis busy while the receiver encodes the next
 * batch (one left both idle in turn); more only made batches smaller.
 */
const MAX_IN_FLIGHT = 2;

/** How long jobs wait for the calls on their way before one more is sent alongside them. */
const STALL_MS = 20;

export class Dispatcher implements JobEnqueue {
  /** Enqueues under way in this process, by key: a concurrent repeat waits for the first. */
  private readonly inFlight = new Map<string, Promise<Enqueued>>();
  private readonly known: KnownJobs;
  private readonly pipeline: StorePipeline;
  /**
   * Sends after the poll phase, so every request whose body was read in this turn shares the
   * script call. While MAX_IN_FLIGHT calls are on their way, new jobs wait for one to answer and
   * then all go in the next one (batches grow with load, writes and per-call costs do not); slow
   * calls hold them at most STALL_MS before one more is sent alongside.
   */
  private readonly batcher: MicroBatcher<PendingJob>;
  private readonly opts: DispatcherOptions;
  private readonly now: () => number;

  constructor(redis: RedisConnection, opts: DispatcherOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    const windowMs = (queueName: string): number => {
      const placement = placementOfQueue(queueName);
      return opts.dedupWindowMs?.[placement] ?? queueWindowMs(placement);
    };
    this.known = new KnownJobs({ maxMs: opts.knownKeyMaxMs ?? 60_000, limit: opts.knownKeyLimit ?? 100_000, windowMs, now: this.now });
    this.pipeline = new StorePipeline(redis, opts, this.known, windowMs, this.now);
    this.batcher = new MicroBatcher<PendingJob>({
      gatherMs: 'turn',
      maxInFlight: MAX_IN_FLIGHT,
      stallMs: STALL_MS,
      send: (batch) => this.pipeline.send(batch),
      onError: (batch, err) => {
        for (const b of batch) b.reject(err);
      },
    });
    // A dropped connection may come back to a Redis that lost data (a restart without
    // persistence, a failover): nothing remembered about it is trusted after that.
    redis.on('close', () => this.forget());
  }

  queue(name: string): Queue {
    return this.pipeline.queue(name);
  }

  /** Drops every known key (e.g. the operator removed jobs, tests flushed Redis). */
  forget(): void {
    this.known.clear();
    this.pipeline.forgetRecordedQueues();
  }

  async enqueue(jobs: readonly RemediationJob[]): Promise<Enqueued[]> {
    if (jobs.length === 0) return [];
    // Every job already known: the answer needs no Redis and no timer.
    const queueNames = jobs.map(queueFor);
    const fromMemory = jobs.map((j, i) => this.knownAnswer(j, queueNames[i]!));
    if (fromMemory.every((e) => e !== undefined)) return fromMemory as Enqueued[];
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`storing jobs took longer than ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    });
    try {
      return await Promise.race([Promise.all(jobs.map((j, i) => fromMemory[i] ?? this.enqueueCoalesced(j, queueNames[i]!))), deadline]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError(`storing jobs failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private knownAnswer(job: RemediationJob, queueName: string): Enqueued | undefined {
    return this.known.has(queueName, job.key) ? enqueuedAnswer(job, queueName, true) : undefined;
  }

  /**
   * Whether every one of these jobs would be answered "deduplicated" from memory right now
   * (the same rule and bounds as enqueue's). For answers kept by the caller (repeat bodies).
   */
  allKnown(jobs: readonly { queue: string; key: string }[]): boolean {
    for (const j of jobs) if (!this.known.has(j.queue, j.key)) return false;
    return jobs.length > 0;
  }

  /**
   * A storm of the same alert arrives concurrently: the first request stores the job, the others
   * wait for it and answer "deduplicated" without their own round trip. Only success is shared;
   * if the first fails, each waiter reports the failure (and the sender retries).
   */
  private async enqueueCoalesced(job: RemediationJob, queueName: string): Promise<Enqueued> {
    const pending = this.inFlight.get(job.key);
    if (pending) return { ...(await pending), deduplicated: true };
    const p = new Promise<Enqueued>((resolve, reject) => {
      this.batcher.add({ job, queueName, deadline: this.now() + this.opts.timeoutMs, resolve, reject });
    });
    this.inFlight.set(job.key, p);
    try {
      return await p;
    } finally {
      this.inFlight.delete(job.key);
    }
  }

  async close(): Promise<void> {
    await this.pipeline.close();
  }
}
