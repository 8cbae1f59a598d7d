import type { RunbookName } from './jobs.ts';

// Policy is data (docs/jobs.md, "Retries and deduplication windows"): where each runbook runs and how it is retried. Handlers never
// decide their own retries; a refusal ends them through UnrecoverableError regardless of this.

export type Placement = 'node' | 'cluster';

export interface RunbookPolicy {
  /** `node`: the affected node's own queue, taken only by that node's agent. `cluster`: the cluster worker. */
  placement: Placement;
  /** Total attempts including the first. */
  attempts: number;
  /** Exponential backoff base delay; attempt n waits about base * 2^(n-1), jittered. */
  backoffMs: number;
  /** 0..1: the share of each delay that is randomised, so a fleet of agents does not retry in step. */
  jitter: number;
  /**
   * How long a finished job is kept, and so how long a repeat of the same incident (same key)
   * folds into it instead of making a new job. Local PV and RBD keys name the volume, so the
   * window is short enough that a recurrence later the same day gets its own job.
   *
   * Every runbook sharing a queue must have the SAME window: when a job finishes, BullMQ trims the
   * queue's finished jobs by one age setting, so one window holds for every runbook on a queue.
   * (When each job carried its own, a 24 h window for node recoveries was really 15 min on any
   * node that also ran a Local PV job.) The worker now applies it for the queue (`keepFinished`
   * below); test/unit/core/catalogue/policy.test.ts holds the equality.
   * A repeat after the window makes a new job; runbooks are idempotent, so that costs a run.
   */
  dedupWindowMs: number;
}

export const RUNBOOK_POLICY: Readonly<Record<RunbookName, RunbookPolicy>> = {
  'residual-multipath-cleanup': { placement: 'node', attempts: 4, backoffMs: 15_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  'local-pv-placeholder': { placement: 'node', attempts: 5, backoffMs: 5_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  'rbd-stale-mapping': { placement: 'cluster', attempts: 5, backoffMs: 10_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  // The node half of rbd-stale-mapping, on the watcher's node. Same window as its parent: a
  // repeat of the cluster job inside it folds into the node job already there.
  'rbd-unmap': { placement: 'node', attempts: 4, backoffMs: 10_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  // After the node comes back (docs/decisions/0008 §6).
  'orphaned-pod-volumes': { placement: 'node', attempts: 3, backoffMs: 30_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  'readonly-filesystem-recovery': { placement: 'node', attempts: 4, backoffMs: 15_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
  'out-of-service-taint-release': { placement: 'cluster', attempts: 5, backoffMs: 30_000, jitter: 0.3, dedupWindowMs: 15 * 60_000 },
};

/**
 * How long finished jobs are kept on a queue of this placement: the shortest window of the
 * runbooks placed there (all equal, see dedupWindowMs above), or DEDUP_WINDOW_SECONDS when set.
 * The worker that finishes a job applies it (BullMQ's Worker `removeOnComplete`/`removeOnFail`),
 * not each job's own options: the same rule for every job on the queue, and less of Redis's
 * work per stored job (bench/README.md, "Figures behind the code").
 */
export function queueWindowMs(placement: Placement, overrideSeconds?: number): number {
  if (overrideSeconds !== undefined) return overrideSeconds * 1000;
  return Math.min(
    ...Object.values(RUNBOOK_POLICY)
      .filter((p) => p.placement === placement)
      .map((p) => p.dedupWindowMs),
  );
}

/** BullMQ's KeepJobs for a queue whose window is `windowMs` (the configuration's dedupWindowMs). */
export const keepFor = (windowMs: number): { age: number } => ({ age: Math.ceil(windowMs / 1000) });

/** BullMQ's KeepJobs for a queue of this placement: finished jobs kept for its window. */
export const keepFinished = (placement: Placement, overrideSeconds?: number): { age: number } => keepFor(queueWindowMs(placement, overrideSeconds));
