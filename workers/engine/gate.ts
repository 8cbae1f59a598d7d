import type { RunbookResult } from '../../src/core/catalogue/result.ts';
import type { ParkReason } from '../../src/core/controls/records.ts';
import type { PlannedStep } from './runbook.ts';

// The engine asks a gate before each step it is about to apply (not before steps the journal or
// the step's own check says are done). The gate answers go, or park (the job waits: a pause, an
// approval not yet given, a tripped breaker), or throws RefusedError (approval rejected or
// expired): the job then fails visibly and is never retried.

export interface Parking {
  reason: ParkReason;
  why: string;
  /** Look again at this time rather than after the controls' recheck interval (evidence maturing). */
  until?: Date;
}

export type GateDecision = { go: true } | { go: false; park: Parking };

export interface PlanView {
  summary: string;
  steps: readonly PlannedStep[];
}

export interface StepGate {
  beforeStep(step: PlannedStep, plan: PlanView): Promise<GateDecision>;
}

export const GO: GateDecision = { go: true };

/** The job must wait; it carries the result so far (facts, plan, steps done) to show while it does. */
export class ParkedError extends Error {
  override name = 'ParkedError';
  readonly parking: Parking;
  readonly result: RunbookResult;
  readonly plan: PlanView;
  constructor(parking: Parking, result: RunbookResult, plan: PlanView) {
    super(`waiting (${parking.reason}): ${parking.why}`);
    this.parking = parking;
    this.result = result;
    this.plan = plan;
  }
}

/** High risk: `risk: 'high'` on the step (or the older `highRisk: true`). */
export const isHighRisk = (step: PlannedStep): boolean => step.risk === 'high' || (step as { highRisk?: unknown }).highRisk === true;
