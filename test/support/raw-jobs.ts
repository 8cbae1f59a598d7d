import { Queue } from 'bullmq';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';

// Jobs written straight into Redis as BullMQ stores them, past the job store: what a writer with
// Redis access (root on a node, an older release, a forger) puts in front of an agent, and a
// test's job with attempts of its own (the store would give it its runbook's). Jobs are read back
// through the port (test/testkit/jobs.ts); this is the tests' one other way to BullMQ, bar the
// tests of the adapter itself (test/int/adapters/jobstore/).

export interface RawQueue {
  readonly name: string;
  /** Stores `data` under `jobId` as BullMQ's Queue.add does: one attempt unless `attempts` says more. */
  add(runbook: string, data: unknown, o: { jobId: string; attempts?: number }): Promise<void>;
  /** Removes the job as BullMQ's Job.remove does (a replay test puts a finished one back). */
  remove(jobId: string): Promise<void>;
  /** BullMQ's own retry of a failed job (Job.retry): what a queue dashboard or a script can do past the API. */
  retry(jobId: string): Promise<void>;
  close(): Promise<void>;
}

/** Queue `name` under `prefix` on `connection` (the caller's, or a URL this opens and closes). */
export function rawQueue(connection: RedisConnection | { url: string }, prefix: string, name: string): RawQueue {
  const queue = new Queue(name, { connection: connection as RedisConnection, prefix });
  return {
    name,
    add: async (runbook, data, o) => {
      await queue.add(runbook, data, o);
    },
    remove: async (jobId) => {
      const job = await queue.getJob(jobId);
      if (!job) throw new Error(`no job ${jobId} on ${name}`);
      await job.remove();
    },
    retry: async (jobId) => {
      const job = await queue.getJob(jobId);
      if (!job) throw new Error(`no job ${jobId} on ${name}`);
      await job.retry('failed');
    },
    close: () => queue.close(),
  };
}
