import { errorName, RefusedError, shouldRetry } from '../../../src/core/errors.ts';
import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import type { Attempt } from './attempt.ts';
import type { StageDeps } from './deps.ts';

/**
 * The record stage of an attempt that failed: a refusal or a failed step is an answer worth
 * reading, so its result (facts, plan, reasons, the commands run so far) stays on the job for
 * GET /v1/jobs/:id; the job ends (counted, `done`, an Event) when the error says not to retry or
 * this was its last attempt, else only the attempt's line is logged. Rethrows `err`: the store
 * decides the retry from it.
 */
export async function failed(d: StageDeps, job: TakenJob, attempt: Attempt, err: unknown, modeWhy: string | undefined, done: () => void): Promise<never> {
  const e = err instanceof Error ? err : new Error(String(err));
  const found = (err as { result?: unknown } | null)?.result;
  const partial = found && typeof found === 'object' && modeWhy ? { ...found, modeWhy } : found;
  if (partial !== undefined) await job.setProgress({ result: partial } as object).catch(() => {});
  const ending = !shouldRetry(err) || attempt.last;
  if (ending) {
    done();
    await attempt.finish(
      err instanceof RefusedError ? 'refused' : e.message.startsWith('not implemented') ? 'not-implemented' : 'failed',
      `${errorName(e)}: ${e.message}`,
    );
  } else {
    await attempt.retries(`${errorName(e)}: ${e.message}`);
  }
  if (err instanceof RefusedError) attempt.event('refused', e.message);
  else if (ending) attempt.event('failed', e.message);
  d.log.warn({ jobId: job.id, runbook: attempt.runbook, err: e.message, retry: !ending }, 'job attempt failed');
  throw err;
}
