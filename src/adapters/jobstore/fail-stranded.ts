import { randomUUID } from '../../core/node-crypto.ts';
import { UnrecoverableError, Worker } from 'bullmq';
import type { RedisConnection } from '../redis/redis.ts';

// Failing a job that waits on a queue no agent serves. BullMQ fails only an ACTIVE job whose lock
// the caller holds (its moveToFinished script refuses anything else), so this takes the jobs the
// supported way, as a worker "processing jobs manually" does (BullMQ docs, guide/workers/
// manually-fetching-jobs): a Worker without a processor that never runs (so it starts no stalled
// check and cannot pass for an agent, agent-presence.ts), `getNextJob(token, { block: false })`,
// then `job.moveToFailed(UnrecoverableError, token)`: no retry, kept for the dedup window like any
// failed job, a `failed` event in the queue's stream.
//
// Never while an agent may be taking it: `stillAbsent` is asked before every job, and taking is
// BullMQ's atomic move from wait to active, so an agent that appears meanwhile and this never
// both hold one job. Jobs are taken oldest first (as an agent would): the first one taken that
// is not in `ids` (not overdue) is given back (moveToWait) and the pass ends.

export interface FailStrandedOptions {
  connection: RedisConnection;
  prefix: string;
  queue: string;
  /** The overdue jobs' ids: only these are failed. */
  ids: ReadonlySet<string>;
  reason: string;
  /** Kept for the queue's deduplication window like any failed job (what its agent's worker would keep). */
  keepFailed: { age: number };
  stillAbsent: () => Promise<boolean>;
}

export async function failStranded(o: FailStrandedOptions): Promise<string[]> {
  const failed: string[] = [];
  if (o.ids.size === 0) return failed;
  const worker = new Worker(o.queue, undefined, {
    connection: o.connection,
    prefix: o.prefix,
    autorun: false,
    skipVersionCheck: true,
    removeOnFail: o.keepFailed,
  });
  worker.on('error', () => {});
  try {
    for (let i = 0; i < o.ids.size; i++) {
      if (!(await o.stillAbsent())) break;
      const token = randomUUID();
      const job = await worker.getNextJob(token, { block: false });
      if (!job) break;
      if (!job.id || !o.ids.has(job.id)) {
        await job.moveToWait(token);
        break;
      }
      try {
        await job.moveToFailed(new UnrecoverableError(o.reason), token, false);
      } catch (err) {
        // Not failed (the connection dropped, Redis refused): given back, not left active under a
        // lock nobody renews on a queue where no worker runs the stalled check that would free it.
        // BullMQ's move is one script: if it did run and only its answer was lost, the job is no
        // longer ours to move and this refusal is ignored.
        await job.moveToWait(token).catch(() => {});
        throw err;
      }
      failed.push(job.id);
    }
  } finally {
    await worker.close();
  }
  return failed;
}
