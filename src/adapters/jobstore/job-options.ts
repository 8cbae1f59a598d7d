import type { JobsOptions } from 'bullmq';
import { RUNBOOK_POLICY } from '../../core/catalogue/policy.ts';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { Enqueued } from '../../core/jobs/job-store.ts';

/**
 * BullMQ options of a job: its key as id (a repeat folds into it) and the runbook's retries.
 * How long it is kept once finished (its deduplication window) is not the job's to say: the
 * worker that finishes it keeps every finished job of its queue for the queue's window
 * (catalogue/policy.ts `keepFinished`, workers/engine/runbook-worker.ts), which is what makes
 * the window hold.
 */
export function jobOptions(job: RemediationJob) {
  const policy = RUNBOOK_POLICY[job.runbook];
  return {
    jobId: job.key,
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs, jitter: policy.jitter },
  } satisfies JobsOptions;
}

/** The answer for a job put on `queueName`: stored as new, or folded into the job of the same key. */
export function enqueuedAnswer(job: RemediationJob, queueName: string, deduplicated: boolean): Enqueued {
  const node = 'node' in job.target ? job.target.node : undefined;
  return { id: job.key, queue: queueName, runbook: job.runbook, ...(node ? { node } : {}), key: job.key, deduplicated };
}
