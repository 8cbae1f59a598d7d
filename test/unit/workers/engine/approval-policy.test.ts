import { describe, expect, it } from 'vitest';
import { approvalReason, gatedSteps, type ApprovalPolicy } from '../../../../workers/engine/approval-policy.ts';
import { isHighRisk } from '../../../../workers/engine/gate.ts';
import type { PlannedStep } from '../../../../workers/engine/runbook.ts';

const s = (id: string, destructive: boolean, extra: object = {}): PlannedStep => ({ id, description: id, destructive, ...extra });
const policy = (p: Partial<ApprovalPolicy> = {}): ApprovalPolicy => ({ highRisk: true, runbooks: [], maxDestructiveSteps: 10, ...p });
const plan = (steps: PlannedStep[]) => ({ summary: 'x', steps });

describe('which steps wait for approval', () => {
  it('gates a step flagged risk: high, and the older highRisk: true, when APPROVAL_HIGH_RISK is on', () => {
    const p = plan([s('release', true, { risk: 'high' }), s('legacy', true, { highRisk: true }), s('flush', true)]);
    expect(gatedSteps(p, 'residual-multipath-cleanup', policy())).toEqual([
      { id: 'release', description: 'release', why: 'high-risk step' },
      { id: 'legacy', description: 'legacy', why: 'high-risk step' },
    ]);
    expect(gatedSteps(p, 'residual-multipath-cleanup', policy({ highRisk: false }))).toEqual([]);
    expect(isHighRisk(s('plain', true))).toBe(false);
  });

  it('gates every destructive step of a runbook named in APPROVAL_RUNBOOKS, never a look-only step', () => {
    const p = plan([s('look', false), s('unmap', true)]);
    expect(gatedSteps(p, 'rbd-unmap', policy({ runbooks: ['rbd-unmap'] })).map((x) => x.id)).toEqual(['unmap']);
    expect(gatedSteps(p, 'local-pv-placeholder', policy({ runbooks: ['rbd-unmap'] }))).toEqual([]);
  });

  it('gates a plan with more destructive steps than K, and not one with exactly K', () => {
    const five = plan([s('a', true), s('b', true), s('c', true), s('d', true), s('e', true), s('look', false)]);
    expect(approvalReason(five.steps[0]!, five, 'residual-multipath-cleanup', policy({ maxDestructiveSteps: 4 }))).toBe(
      'the plan has 5 destructive steps, more than 4',
    );
    expect(approvalReason(five.steps[5]!, five, 'residual-multipath-cleanup', policy({ maxDestructiveSteps: 4 }))).toBeUndefined();
    expect(approvalReason(five.steps[0]!, five, 'residual-multipath-cleanup', policy({ maxDestructiveSteps: 5 }))).toBeUndefined();
    expect(approvalReason(five.steps[0]!, five, 'residual-multipath-cleanup', policy({ maxDestructiveSteps: 0 }))).toBeUndefined();
  });
});
