import { Worker, UnrecoverableError, type Job } from 'bullmq';
import { RemediationJob, type RunbookName } from '../../src/catalogue/jobs.ts';
import { recordFinished } from '../../src/catalogue/job-stats.ts';
import type { Mode, RunbookResult } from '../../src/catalogue/result.ts';
import { workerConnection } from '../../src/queues/redis.ts';
import type { Logger } from '../../src/observability/logger.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../runbooks/registry.ts';
import { PermanentError, RefusedError, forBullmq, shouldRetry } from './errors.ts';

// One BullMQ worker that runs registered runbooks: shared by the node agent (its node's queue)
// and the cluster worker (the cluster queue). It parses every job again (Redis is a boundary),
// runs one job at a time, and turns errors into retry decisions in one place.

export interface RunbookWorkerOptions {
  queue: string;
  redisUrl: string;
  prefix: string;
  ranOn: string;
  registry: RunbookRegistry;
  modeOf: (runbook: RunbookName) => Mode;
  /** Rejects jobs that are not for this worker (a node agent only runs its node's jobs). */
  accepts: (job: RemediationJob) => string | undefined;
  lockDurationMs: number;
  log: Logger;
}

export interface RunbookWorker {
  worker: Worker;
  close(): Promise<void>;
}

export function createRunbookWorker(opts: RunbookWorkerOptions): RunbookWorker {
  const connection = workerConnection(opts.redisUrl);
  const shutdown = new AbortController();

  const processor = async (job: Job): Promise<RunbookResult> => {
    const started = Date.now();
    const parsed = RemediationJob.safeParse(job.data);
    const runbook = parsed.success ? parsed.data.runbook : String(job.name);
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const finish = (outcome: string): Promise<void> =>
      recordFinished(connection, opts.prefix, runbook, outcome, (Date.now() - started) / 1000).catch((err: Error) => {
        opts.log.warn({ err: err.message }, 'could not record job statistics');
      });
    try {
      if (!parsed.success) throw new PermanentError(`job data does not match the catalogue: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      const wrongPlace = opts.accepts(parsed.data);
      if (wrongPlace) throw new PermanentError(wrongPlace);
      const handler = opts.registry[parsed.data.runbook] as RunbookHandler<RunbookName> | undefined;
      // Never a silent success: a job whose runbook is not built into this worker fails visibly.
      if (!handler) throw new PermanentError(`not implemented: runbook ${parsed.data.runbook} is not available in ${opts.ranOn}`);
      const ctx: RunbookContext = {
        jobId: job.id ?? parsed.data.key,
        attempt: job.attemptsMade + 1,
        mode: opts.modeOf(parsed.data.runbook),
        ranOn: opts.ranOn,
        log: opts.log.child({ jobId: job.id, runbook: parsed.data.runbook }),
        signal: shutdown.signal,
      };
      await job.log(`attempt ${ctx.attempt} on ${opts.ranOn} in ${ctx.mode} mode`);
      const result = await handler(parsed.data as never, ctx);
      await job.log(`${result.outcome}: ${result.summary}`);
      await finish(result.outcome);
      return result;
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      await job.log(`${e.name}: ${e.message}`).catch(() => {});
      const partial = (err as { result?: unknown } | null)?.result;
      if (partial !== undefined) {
        // A refusal or a failed step is an answer worth reading: keep its result (facts, plan,
        // reasons, the commands run so far) on the job for GET /v1/jobs/:id.
        await job.updateProgress({ result: partial } as object).catch(() => {});
      }
      const ending = !shouldRetry(err) || lastAttempt;
      if (ending) await finish(err instanceof RefusedError ? 'refused' : e.message.startsWith('not implemented') ? 'not-implemented' : 'failed');
      opts.log.warn({ jobId: job.id, runbook, err: e.message, retry: !ending }, 'job attempt failed');
      throw forBullmq(err);
    }
  };

  const worker = new Worker(opts.queue, processor, {
    connection,
    prefix: opts.prefix,
    concurrency: 1,
    lockDuration: opts.lockDurationMs,
    stalledInterval: opts.lockDurationMs,
    // A job that stalled (its worker died) is taken again; after this many stalls it fails, so
    // a runbook that kills its own agent cannot loop forever.
    maxStalledCount: 2,
    autorun: true,
  });
  worker.on('error', (err) => opts.log.error({ err: err.message }, 'worker error'));
  worker.on('stalled', (id) => opts.log.warn({ jobId: id }, 'job stalled (its worker stopped); it will be taken again'));

  let closing: Promise<void> | undefined;
  return {
    worker,
    close: () => (closing ??= (async () => {
      shutdown.abort();
      // Waits for the running job to finish its current step; BullMQ keeps its lock meanwhile.
      await worker.close();
      await connection.quit().catch(() => connection.disconnect());
    })()),
  };
}

export { UnrecoverableError };
