import type { JobReads } from '../../core/jobs/job-store.ts';
import type { IncidentIndex } from '../../adapters/jobstore/incident-index.ts';
import { jobStates } from '../../adapters/jobstore/job-states.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import type { JobRef, RecordJobs } from './record-sync.ts';

// The job store as the record sync reads it, the way the console does: new jobs from the
// console's incident index (newest first, a chunk at a time, stopping at the first older than
// asked), states from one script call per chunk of queues (job-states.ts), a job from its queue.

/** Index entries read at a time. */
const CHUNK = 500;

export function redisRecordJobs(redis: RedisConnection, prefix: string, index: IncidentIndex, jobs: Pick<JobReads, 'state' | 'get'>): RecordJobs {
  return {
    async storedSince(sinceMs, max) {
      const out: JobRef[] = [];
      let before: number | undefined;
      while (out.length < max) {
        const read = await index.older(before, Math.min(CHUNK, max - out.length));
        for (const e of read) {
          if (e.score < sinceMs * 1000) return out;
          out.push({ queue: e.queue, id: e.id });
        }
        if (read.length === 0) return out;
        before = read[read.length - 1]!.score;
      }
      return out;
    },
    states: (refs) =>
      jobStates(
        redis,
        prefix,
        refs.map((r) => ({ ...r, runbook: '', score: 0, member: `${r.queue}\t${r.id}` })),
      ),
    async read(queue, id) {
      // State first, then the job (as the console: a job finishing in between still shows its result).
      const state = await jobs.state(queue, id);
      const job = state === 'unknown' ? undefined : await jobs.get(queue, id);
      return job ? { job, state } : undefined;
    },
  };
}
