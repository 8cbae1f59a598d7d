import type { RemediationJob, RunbookName } from '../../../src/core/catalogue/jobs.ts';
import type { Mode } from '../../../src/core/catalogue/result.ts';
import { PermanentError } from '../../../src/core/errors.ts';
import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import type { Parking } from '../gate.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../registry.ts';
import type { StageDeps } from './deps.ts';

// Stage 2, begin: the job is one of ours (the catalogue, this worker's place, a runbook built
// in), and the operator's controls let it start now (its mode, pauses, breakers, approvals:
// job-controls.ts) or park it.

export interface BeginRules {
  registry: RunbookRegistry;
  modeOf: (runbook: RunbookName) => Mode;
  /** Why a job is not for this worker (a node agent only runs its node's jobs), or undefined. */
  accepts: (job: RemediationJob) => string | undefined;
  /** Aborted when the worker closes. */
  signal: AbortSignal;
}

export type Begun =
  | { kind: 'park'; parking: Parking; modeWhy?: string | undefined }
  | { kind: 'run'; job: RemediationJob; handler: RunbookHandler<RunbookName>; ctx: RunbookContext; modeWhy?: string | undefined };

export async function begin(d: StageDeps, rules: BeginRules, job: TakenJob, parsed: ReturnType<typeof RemediationJob.safeParse>): Promise<Begun> {
  if (!parsed.success) throw new PermanentError(`job data does not match the catalogue: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const data = parsed.data;
  const wrongPlace = rules.accepts(data);
  if (wrongPlace) throw new PermanentError(wrongPlace);
  const handler = rules.registry[data.runbook] as RunbookHandler<RunbookName> | undefined;
  // Never a silent success: a job whose runbook is not built into this worker fails visibly.
  if (!handler) throw new PermanentError(`not implemented: runbook ${data.runbook} is not available in ${d.ranOn}`);
  const jobId = job.id || data.key;
  const controls = d.controls;
  const begun = await controls?.begin({
    jobId,
    queue: d.queue,
    runbook: data.runbook,
    createdAt: job.timestamp,
    configuredMode: rules.modeOf(data.runbook),
    source: data.evidence[0]?.source,
    ...(data.stormCounted ? { stormCounted: true } : {}),
  });
  if (begun?.park) return { kind: 'park', parking: begun.park, modeWhy: begun.modeWhy };
  // Only a job that ran before can be listed as parked (a first run's progress is 0): one
  // command less per job (bench:fleet counts them).
  if (typeof job.progress === 'object' && job.progress !== null) await controls?.unpark(jobId);
  const ctx: RunbookContext = {
    jobId,
    ...(data.retry ? { journalKey: data.retry.of } : {}),
    sameJobWithinMs: d.keptFinishedMs,
    attempt: job.attemptsMade + 1,
    mode: begun?.mode ?? rules.modeOf(data.runbook),
    ranOn: d.ranOn,
    log: d.log.child({ jobId: job.id, runbook: data.runbook }),
    signal: rules.signal,
    ...(begun ? { gate: begun.gate } : {}),
    ...(d.coordination ? { coordination: d.coordination } : {}),
    ...(controls
      ? {
          audit: (action: string, target: string, why: string) =>
            controls.audit(action, target, why).catch((err: Error) => d.log.warn({ err: err.message }, 'could not write the audit trail')),
        }
      : {}),
  };
  return { kind: 'run', job: data, handler, ctx, modeWhy: begun?.modeWhy };
}
