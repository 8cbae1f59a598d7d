import type { PlanView } from './gate.ts';
import { isHighRisk } from './gate.ts';
import type { PlannedStep } from './runbook.ts';

// Which steps of a plan wait for a human's approval (enforce only). Pure: the plan and the
// policy in, the reasons out. One approval covers every gated step of the plan it was asked for.

export interface ApprovalPolicy {
  /** APPROVAL_HIGH_RISK: steps flagged high risk. */
  highRisk: boolean;
  /** APPROVAL_RUNBOOKS: every destructive step of these runbooks. */
  runbooks: readonly string[];
  /** APPROVAL_MAX_DESTRUCTIVE_STEPS: a plan with more destructive steps than this; 0: no limit. */
  maxDestructiveSteps: number;
}

export function approvalReason(step: PlannedStep, plan: PlanView, runbook: string, policy: ApprovalPolicy): string | undefined {
  if (policy.highRisk && isHighRisk(step)) return 'high-risk step';
  if (!step.destructive) return undefined;
  if (policy.runbooks.includes(runbook)) return `every destructive step of ${runbook} needs approval`;
  const destructive = plan.steps.filter((s) => s.destructive).length;
  if (policy.maxDestructiveSteps > 0 && destructive > policy.maxDestructiveSteps) {
    return `the plan has ${destructive} destructive steps, more than ${policy.maxDestructiveSteps}`;
  }
  return undefined;
}

export function gatedSteps(plan: PlanView, runbook: string, policy: ApprovalPolicy): { id: string; description: string; why: string }[] {
  return plan.steps.flatMap((s) => {
    const why = approvalReason(s, plan, runbook, policy);
    return why ? [{ id: s.id, description: s.description, why }] : [];
  });
}
