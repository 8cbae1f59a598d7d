import type { Job, Queue } from 'bullmq';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import { CLUSTER_QUEUE, nodeOfQueue } from '../../core/catalogue/queues.ts';
import type { FoundJob, JobRef, JobState, JobStore, StoredJob } from '../../core/jobs/job-store.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { STATE_PLACES } from './bullmq-keys.ts';
import { jobOptions } from './store-pipeline.ts';

// The job store's read and operator side on BullMQ, over the queues the dispatcher holds (one
// Queue object per queue name, its connection shared).

export interface BullJobStoreOptions {
  redis: RedisConnection;
  prefix: string;
  /** The queue's handle (the dispatcher's: one per name). */
  queue: (name: string) => Queue;
}

/** A BullMQ job as the port's plain data. */
export function storedJob(job: Job): StoredJob {
  return {
    id: job.id ?? '',
    name: job.name,
    data: job.data,
    timestamp: job.timestamp,
    ...(job.processedOn ? { processedOn: job.processedOn } : {}),
    ...(job.finishedOn ? { finishedOn: job.finishedOn } : {}),
    attemptsMade: job.attemptsMade,
    attemptsStarted: job.attemptsStarted,
    attempts: job.opts.attempts ?? 1,
    progress: job.progress,
    ...(job.returnvalue !== null && job.returnvalue !== undefined ? { returnvalue: job.returnvalue } : {}),
    ...(job.failedReason ? { failedReason: job.failedReason } : {}),
  };
}

export class BullJobStore implements JobStore {
  readonly #o: BullJobStoreOptions;

  constructor(o: BullJobStoreOptions) {
    this.#o = o;
  }

  async state(queue: string, id: string): Promise<JobState | 'unknown'> {
    return (await this.#o.queue(queue).getJobState(id)) as JobState | 'unknown';
  }

  async get(queue: string, id: string): Promise<StoredJob | undefined> {
    const job = await this.#o.queue(queue).getJob(id);
    return job ? storedJob(job) : undefined;
  }

  // On the queues something recorded the job under first (the console's incident index, a
  // parked job's record: `likely`), then on every other known queue (a job nothing recorded:
  // trimmed from the index, stored before it, or by a node agent, whose Redis user cannot write
  // the index). So a lookup costs one queue read wherever the job was recorded, instead of one
  // per known queue (5,000 at 5,000 nodes).
  async find(id: string, likely?: (id: string) => Promise<readonly (string | undefined)[]>): Promise<FoundJob | undefined> {
    const none: readonly (string | undefined)[] = [];
    const [hints, known] = await Promise.all([
      likely ? likely(id).catch(() => none) : Promise.resolve(none),
      this.#o.redis.smembers(knownQueuesKey(this.#o.prefix)),
    ]);
    const hinted = hints.filter((q): q is string => q !== undefined && (q === CLUSTER_QUEUE || nodeOfQueue(q) !== undefined));
    for (const name of new Set([...hinted, ...known.sort()])) {
      const q = this.#o.queue(name);
      // State first, then the hash: read the other way round, a job finishing in between shows as
      // completed without its result.
      const state = await q.getJobState(id);
      if (state === 'unknown') continue;
      const job = await q.getJob(id);
      if (job) return { queue: name, job: storedJob(job), state: state as JobState };
    }
    return undefined;
  }

  async logs(queue: string, id: string, max: number): Promise<{ lines: string[]; count: number }> {
    const { logs, count } = await this.#o.queue(queue).getJobLogs(id, 0, max - 1);
    return { lines: logs, count };
  }

  /** One ZSCORE or LPOS each (BullMQ's places, bullmq-keys.ts), all in flight at once. */
  async areIn(state: JobState, jobs: readonly JobRef[]): Promise<boolean[]> {
    const place = state in STATE_PLACES ? STATE_PLACES[state as keyof typeof STATE_PLACES] : undefined;
    if (!place) throw new Error(`the job store cannot list jobs in state ${state}`);
    return Promise.all(
      jobs.map(async (j) => {
        const q = this.#o.queue(j.queue);
        const client = await q.client;
        const key = q.toKey(place.suffix);
        return place.kind === 'zset' ? (await client.zscore(key, j.id)) !== null : (await client.lpos(key, j.id)) !== null;
      }),
    );
  }

  async add(queue: string, job: RemediationJob, data: unknown): Promise<void> {
    // Known first (find() looks there), as the dispatcher does for every new queue.
    await this.#o.redis.sadd(knownQueuesKey(this.#o.prefix), queue);
    const added = await this.#o.queue(queue).add(job.runbook, data, jobOptions(job));
    if (added.id !== job.key) throw new Error(`BullMQ stored job ${job.key} as ${String(added.id)}`);
  }

  /** Moves a delayed job to waiting now; a job in any other state is left alone (it looks again on its own). */
  async promote(queue: string, id: string): Promise<boolean> {
    try {
      const job = await this.#o.queue(queue).getJob(id);
      if (!job || !(await job.isDelayed())) return false;
      await job.promote();
      return true;
    } catch {
      return false;
    }
  }
}
