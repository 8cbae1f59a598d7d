import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import type { Parking, PlanView } from '../gate.ts';
import type { StageDeps } from './deps.ts';

/** How long a parked job waits before it looks again when nothing says otherwise (no controls). */
const DEFAULT_RECHECK_MS = 30_000;

/**
 * Parks the job: its plan and the result so far go into its progress, it is listed as parked,
 * and it waits (delayed) until the next recheck (or until the API promotes it); no attempt is
 * used.
 */
export async function park(d: StageDeps, job: TakenJob, parking: Parking, plan?: PlanView, partial?: unknown): Promise<never> {
  const jobId = job.id;
  const runbook = String((job.data as { runbook?: unknown }).runbook ?? job.name);
  const controls = d.controls;
  // Without controls only evidence can park a job (nothing else asks); it is then not listed.
  const since = controls ? await controls.park({ jobId, queue: d.queue, runbook, reason: parking.reason, why: parking.why }) : new Date().toISOString();
  const at = parking.until ? Math.max(parking.until.getTime(), Date.now() + 1000) : Date.now() + (controls?.recheckMs ?? DEFAULT_RECHECK_MS);
  const recheckAt = new Date(at).toISOString();
  const { until: _until, ...shown } = parking;
  await job.setProgress({
    parked: { ...shown, since, recheckAt, ...(plan ? { plan } : {}) },
    ...(partial !== undefined ? { result: partial } : {}),
  });
  await job.log(`waiting (${parking.reason}) until ${recheckAt}: ${parking.why}`);
  return job.park(at);
}
