import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueFor } from '../catalogue/queues.ts';
import { RUNBOOK_POLICY, dedupWindowMs } from '../catalogue/policy.ts';
import type { RemediationJob, RunbookName } from '../catalogue/jobs.ts';
import { knownQueuesKey } from './known-queues.ts';

// Puts triaged jobs on their queues. The job id IS the idempotency key, so BullMQ itself folds a
// repeat into the existing job for as long as that job is kept; completed and failed jobs are
// kept exactly for the runbook's deduplication window, which is what makes the window hold.

export interface Enqueued {
  id: string;
  queue: string;
  runbook: RunbookName;
  node?: string;
  key: string;
  deduplicated: boolean;
}

/** Storing failed (Redis down or too slow): the HTTP layer answers 503 so the sender retries. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

export interface DispatcherOptions {
  prefix: string;
  timeoutMs: number;
  /** Overrides every runbook's window (DEDUP_WINDOW_SECONDS). */
  dedupWindowSeconds?: number;
}

export class Dispatcher {
  private readonly queues = new Map<string, Queue>();
  /** Enqueues under way in this process, by key: a concurrent repeat waits for the first. */
  private readonly inFlight = new Map<string, Promise<Enqueued>>();
  private readonly redis: Redis;
  private readonly opts: DispatcherOptions;

  constructor(redis: Redis, opts: DispatcherOptions) {
    this.redis = redis;
    this.opts = opts;
  }

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.redis, prefix: this.opts.prefix });
      // Errors surface through the add() promise; this only keeps a dropped connection from
      // becoming an unhandled 'error' event.
      q.on('error', () => {});
      this.queues.set(name, q);
    }
    return q;
  }

  async enqueue(jobs: readonly RemediationJob[]): Promise<Enqueued[]> {
    if (jobs.length === 0) return [];
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`storing jobs took longer than ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    });
    try {
      return await Promise.race([Promise.all(jobs.map((j) => this.enqueueCoalesced(j))), deadline]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError(`storing jobs failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A storm of the same alert arrives concurrently: the first request stores the job, the others
   * wait for it and answer "deduplicated" without their own round trip. Only success is shared;
   * if the first fails, each waiter reports the failure (and the sender retries).
   */
  private async enqueueCoalesced(job: RemediationJob): Promise<Enqueued> {
    const pending = this.inFlight.get(job.key);
    if (pending) return { ...(await pending), deduplicated: true };
    const p = this.enqueueOne(job);
    this.inFlight.set(job.key, p);
    try {
      return await p;
    } finally {
      this.inFlight.delete(job.key);
    }
  }

  private async enqueueOne(job: RemediationJob): Promise<Enqueued> {
    const queueName = queueFor(job);
    const queue = this.queue(queueName);
    const policy = RUNBOOK_POLICY[job.runbook];
    const windowMs = this.opts.dedupWindowSeconds !== undefined ? this.opts.dedupWindowSeconds * 1000 : dedupWindowMs(job.runbook);
    // Whether the job already existed, asked right before the add. Exact within one receiver
    // (concurrent repeats are coalesced above). Across receiver replicas two first deliveries
    // racing each other may both say `false`; BullMQ still stores one job, only the flag differs.
    const [exists] = await Promise.all([
      this.redis.exists(`${this.opts.prefix}:${queueName}:${job.key}`),
      this.redis.sadd(knownQueuesKey(this.opts.prefix), queueName),
    ]);
    await queue.add(job.runbook, job, {
      jobId: job.key,
      attempts: policy.attempts,
      backoff: { type: 'exponential', delay: policy.backoffMs, jitter: policy.jitter },
      removeOnComplete: { age: Math.ceil(windowMs / 1000) },
      removeOnFail: { age: Math.ceil(windowMs / 1000) },
    });
    const node = 'node' in job.target ? job.target.node : undefined;
    return { id: job.key, queue: queueName, runbook: job.runbook, ...(node ? { node } : {}), key: job.key, deduplicated: exists === 1 };
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
