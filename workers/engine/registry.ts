import type { JobOf, RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { Coordination } from '../../src/core/coordination/coordination.ts';
import type { StepGate } from './gate.ts';

// What the engine asks of a runbook (the runbooks implement it; the node agent and the cluster
// worker build their registries of it): a function from a parsed job and its context to a
// result, throwing the errors of src/core/errors.ts to say whether a failure is worth a retry.

export interface RunbookContext {
  /** The job's id in the job store (= the idempotency key). */
  jobId: string;
  /**
   * The key the host journal is kept under: the job id, or for an operator's retry the first
   * job's key (`retry.of`), so a retry skips the steps its predecessors already took.
   */
  journalKey?: string;
  /**
   * The queue's deduplication window (how long it keeps a finished job): while the receiver would
   * fold a repeat into the stored job, a job with the same id can only be that job again (its
   * record lost in a Redis failover and stored again by a retried webhook), so a journal finished
   * within it still skips the steps it lists. None: a finished journal is never reused.
   */
  sameJobWithinMs?: number;
  /** 1 for the first attempt. */
  attempt: number;
  /** The mode this job runs in, decided by configuration when the job starts. */
  mode: Mode;
  /** Who runs it: the node agent's NODE_NAME, or `cluster-worker`. */
  ranOn: string;
  log: Logger;
  /** Aborted when the worker is shutting down: stop between steps, the job will be retried. */
  signal: AbortSignal;
  /**
   * Other tools acting on the job's node (kured's reboot lock, a drain, a medik8s remediation),
   * asked fresh before each destructive step: busy or unknown parks the job (reason coordination)
   * for `recheckMs` and it looks again. None: not asked (COORDINATION=off, unit tests).
   */
  coordination?: { check: Coordination; recheckMs: number };
  /** Called once the engine is about to apply a destructive step of the job (the in-progress gauge of the worker's /metrics). */
  acting?: (node: string | undefined) => void;
  /** Operator controls (pause, approval, breakers), asked before each step is applied; none in unit tests. */
  gate?: StepGate;
  /**
   * The operator audit trail: every destructive step applied in enforce and every refusal is
   * written there with the evidence it stood on or lacked. Never throws into the runbook.
   */
  audit?: (action: 'destructive-step' | 'refused', target: string, why: string) => Promise<void>;
}

export type RunbookHandler<R extends RunbookName> = (job: JobOf<R>, ctx: RunbookContext) => Promise<RunbookResult>;

export type RunbookRegistry = { [R in RunbookName]?: RunbookHandler<R> };
