import { RunbookResult } from '../../core/catalogue/result.ts';
import type { JobState, StoredJob } from '../../core/jobs/job-store.ts';

// What a VolumeMedicRemediation's status says, from its job as the store has it: medik8s' External
// Remediation conditions (github.com/medik8s/common pkg/conditions: `Processing`, `Succeeded`), of
// which NodeHealthCheck reads `Succeeded` (internal/controller/nodehealthcheck_controller.go,
// remediationFailed/remediationSucceeded): False makes it try the next escalating remediation at
// once, True makes it wait for the node until that remediation's timeout (and it then skips the
// nhc-timed-out annotation). So True means volume-medic cleaned something; a job that found nothing
// to clean, only planned (dry-run), was refused or failed is False: no reason to hold NHC back.
// Pure: the watch (node-healthcheck.ts) reads the store and writes the result.

const PROCESSING = 'Processing';
const SUCCEEDED = 'Succeeded';

type Phase = 'Queued' | 'Running' | 'Parked' | 'Succeeded' | 'Failed' | 'Skipped';

interface Condition {
  type: typeof PROCESSING | typeof SUCCEEDED;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface RemediationStatus {
  phase: Phase;
  /** The job's id (its idempotency key), once stored. */
  jobId?: string;
  /** The job's queue: the node's. */
  queue?: string;
  conditions: Condition[];
  lastUpdateTime: string;
}

/** Where the object's job stands, as the watch found it. */
export type JobView =
  | { kind: 'none'; reason: string; message: string }
  /** No job yet, asked again at each resync: the node's agent does not run what the job needs yet (src/control/ingest/agent-gate.ts). */
  | { kind: 'held'; message: string }
  | { kind: 'withdrawn'; jobId: string; queue: string; reason: string; message: string }
  | { kind: 'stored'; jobId: string; queue: string; state: JobState | 'unknown'; job?: StoredJob | undefined };

/** A finished phase is final: the watch stops looking at the object's job. */
export const isFinal = (s: { phase?: unknown } | undefined): boolean => s?.phase === 'Succeeded' || s?.phase === 'Failed' || s?.phase === 'Skipped';

interface Verdict {
  phase: Phase;
  reason: string;
  message: string;
}

const MAX_MESSAGE = 1024;

/** The status for `view`; conditions whose status did not change keep their lastTransitionTime (as meta.SetStatusCondition does). */
export function remediationStatus(view: JobView, previous: Partial<RemediationStatus> | undefined, now: number): RemediationStatus {
  const v = verdict(view);
  const at = new Date(now).toISOString();
  const running = v.phase === 'Queued' || v.phase === 'Running' || v.phase === 'Parked';
  const wanted: Omit<Condition, 'lastTransitionTime'>[] = [
    { type: PROCESSING, status: running ? 'True' : 'False', reason: running ? `Job${v.phase}` : v.reason, message: v.message },
    {
      type: SUCCEEDED,
      status: running ? 'Unknown' : v.phase === 'Succeeded' ? 'True' : 'False',
      reason: running ? 'InProgress' : v.reason,
      message: v.message,
    },
  ];
  const conditions = wanted.map((c): Condition => {
    const before = previous?.conditions?.find((p) => p.type === c.type);
    const message = c.message.slice(0, MAX_MESSAGE);
    return { ...c, message, lastTransitionTime: before && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : at };
  });
  return {
    phase: v.phase,
    ...(view.kind !== 'none' && view.kind !== 'held' ? { jobId: view.jobId, queue: view.queue } : {}),
    conditions,
    lastUpdateTime: at,
  };
}

/** Whether writing `next` would change what `current` says (times aside): no write, no new resourceVersion. */
export function statusChanged(current: Partial<RemediationStatus> | undefined, next: RemediationStatus): boolean {
  const strip = (s: Partial<RemediationStatus> | undefined) =>
    JSON.stringify({
      phase: s?.phase,
      jobId: s?.jobId,
      queue: s?.queue,
      conditions: (s?.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message]),
    });
  return strip(current) !== strip(next);
}

function verdict(view: JobView): Verdict {
  if (view.kind === 'none') return { phase: 'Skipped', reason: view.reason, message: view.message };
  if (view.kind === 'held') return { phase: 'Queued', reason: 'AgentTooOld', message: view.message };
  if (view.kind === 'withdrawn') return { phase: 'Failed', reason: view.reason, message: view.message };
  const { state, job, jobId } = view;
  switch (state) {
    case 'waiting':
    case 'prioritized':
    case 'paused':
    case 'waiting-children':
      return { phase: 'Queued', reason: 'JobQueued', message: `job ${jobId} waits for the node agent` };
    case 'delayed':
      return {
        phase: 'Parked',
        reason: 'JobParked',
        message: `job ${jobId} is parked (a control, an approval or evidence to mature; see volume-medic show ${jobId})`,
      };
    case 'active':
      return { phase: 'Running', reason: 'JobRunning', message: `job ${jobId} is running` };
    case 'failed':
      return { phase: 'Failed', reason: 'JobFailed', message: `job ${jobId} failed: ${job?.failedReason ?? 'no reason recorded'}` };
    case 'completed':
      return completed(jobId, job);
    case 'unknown':
      return {
        phase: 'Failed',
        reason: 'JobGone',
        message: `job ${jobId} is no longer in the store (withdrawn, or removed with retention before its end was seen)`,
      };
    default: {
      const never: never = state;
      return never;
    }
  }
}

function completed(jobId: string, job: StoredJob | undefined): Verdict {
  const r = RunbookResult.safeParse(job?.returnvalue);
  if (!r.success) return { phase: 'Failed', reason: 'ResultUnreadable', message: `job ${jobId} completed without a result volume-medic can read` };
  const said = `job ${jobId}: ${r.data.summary}`;
  switch (r.data.outcome) {
    case 'succeeded':
      return { phase: 'Succeeded', reason: 'RemediationSucceeded', message: said };
    case 'nothing-to-do':
      return { phase: 'Failed', reason: 'NothingToClean', message: said };
    case 'planned':
      return { phase: 'Failed', reason: 'DryRun', message: said };
    case 'refused':
      return { phase: 'Failed', reason: 'Refused', message: `${said}${r.data.refusals.length ? ` (${r.data.refusals.join('; ')})` : ''}` };
    case 'waiting':
      return { phase: 'Parked', reason: 'JobParked', message: said };
    case 'failed':
    case 'not-implemented':
      return { phase: 'Failed', reason: 'RemediationFailed', message: said };
    default: {
      const never: never = r.data.outcome;
      return never;
    }
  }
}
