import type { JobOf, RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { StepEvidence } from '../../src/core/catalogue/step-evidence.ts';
import type { Host } from '../host/host.ts';
import type { KubeWrites } from '../kube-writes/kube-writes.ts';

// The shape every runbook has (a runbook plans before it acts: docs/safety.md):
// observe (facts through the Host) -> plan (pure) -> act (idempotent, journaled steps) -> verify.

/** A step as the plan states it: plain data, shown in dry-run and journaled by id. */
export interface PlannedStep {
  /**
   * Stable and parameterised (`detach-loop:loop101`): the journal skips a step whose id is
   * recorded as done, so a different parameter must give a different id.
   */
  id: string;
  description: string;
  /** Removes or detaches something; counts against blast-radius caps. */
  destructive: boolean;
  /**
   * `high`: waits for an operator's approval in enforce when APPROVAL_HIGH_RISK is on (e.g.
   * `rbd unmap -o force`, `dmsetup message ... fail_if_no_path`, `ceph osd blocklist add`).
   */
  risk?: 'high';
  /**
   * The positive evidence the step relies on. Required for a destructive step: the engine
   * refuses one that names none, or whose evidence is missing, contradictory or stale, and makes
   * it wait while a claim that must persist is too young (workers/engine/judge-evidence.ts).
   */
  evidence?: StepEvidence[];
}

export type Plan<S extends PlannedStep> =
  | { kind: 'refuse'; reasons: string[] }
  /**
   * Not a refusal: what the plan needs is not there yet but is expected (a device whose paths are
   * still dead). Enforce parks the job until `until` and looks again; dry-run reports the wait.
   */
  | { kind: 'wait'; why: string; until: Date }
  | { kind: 'nothing-to-do'; summary: string }
  | { kind: 'steps'; summary: string; steps: S[] };

/**
 * Check-then-change for one step kind. `isDone` only looks; `apply` may assume it said no.
 * Changes go through `host` (the node) and `kube` (the cluster's state): the engine hands both in
 * audited (enforce) or simulated (dry-run, a parked job's plan view), never the raw ports.
 */
export interface StepExecutor<S extends PlannedStep> {
  isDone(step: S, host: Host, kube: KubeWrites): Promise<boolean>;
  apply(step: S, host: Host, kube: KubeWrites): Promise<void>;
}

export interface Check {
  what: string;
  ok: boolean;
  detail?: string;
}

export interface Verification {
  ok: boolean;
  checks: Check[];
}

export interface RunbookDefinition<R extends RunbookName, F, S extends PlannedStep> {
  runbook: R;
  observe(job: JobOf<R>, host: Host): Promise<F>;
  plan(facts: F, job: JobOf<R>): Plan<S>;
  steps: StepExecutor<S>;
  /** Observes again and says whether the world is what the plan promised. */
  verify(job: JobOf<R>, host: Host, plan: Extract<Plan<S>, { kind: 'steps' }>, kube: KubeWrites): Promise<Verification>;
}

export const verification = (checks: Check[]): Verification => ({ ok: checks.every((c) => c.ok), checks });
