import { describe, expect, it } from 'vitest';
import type { JobEventInput } from '../../../../../src/adapters/kube/job-events.ts';
import type { RemediationJob } from '../../../../../src/core/catalogue/jobs.ts';
import type { TakenJob } from '../../../../../src/core/jobs/job-store.ts';
import type { Parking, PlanView } from '../../../../../workers/engine/gate.ts';
import { Attempt } from '../../../../../workers/engine/stages/attempt.ts';
import type { StageDeps } from '../../../../../workers/engine/stages/deps.ts';

// The wait Events of one attempt (workers/engine/stages/attempt.ts): an approval names the steps
// and the command that approves; a wait is posted when the job parks for a reason it was not
// parked for just before (its progress), not on each recheck of the same wait.

const JOB = {
  runbook: 'out-of-service-taint-release',
  key: 'oos_worker-4_1',
  target: { node: 'worker-4' },
  evidence: [],
} as unknown as RemediationJob;

function attempt(progress: unknown): { a: Attempt; sent: JobEventInput[] } {
  const sent: JobEventInput[] = [];
  const d = {
    ranOn: 'cluster-worker',
    events: {
      recordJobEvent: async (input: JobEventInput) => {
        sent.push(input);
      },
    },
  } as unknown as StageDeps;
  const job = { id: 'oos_worker-4_1', attemptsMade: 0, attempts: 3, progress } as unknown as TakenJob;
  return { a: new Attempt(d, job, JOB), sent };
}

const PLAN: PlanView = {
  summary: 'remove the out-of-service taint',
  steps: [
    { id: 'check-node', description: 'read the node', destructive: false },
    { id: 'remove-taint', description: 'remove the taint', destructive: true, risk: 'high' },
  ],
};
const approval: Parking = { reason: 'approval', why: 'waiting for approval of 1 step(s) (remove-taint: ...) until 2026-12-07T15:00:00.000Z' };

describe('the Events of a waiting job', () => {
  it('an approval wait names the steps and how to approve, as a Warning outcome of its own', () => {
    const { a, sent } = attempt(0);
    a.parked(approval, PLAN);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ outcome: 'awaiting-approval', regarding: { kind: 'Node', name: 'worker-4' } });
    expect(sent[0]!.message).toMatch(/approval of remove-taint: volume-medic approve oos_worker-4_1/);
  });

  it('a recheck of the same wait posts nothing; another reason, or a new approval request, does', () => {
    const same = attempt({ parked: { reason: 'approval', why: approval.why } });
    same.a.parked(approval, PLAN);
    expect(same.sent).toEqual([]);
    const renewed = attempt({ parked: { reason: 'approval', why: 'an earlier request' } });
    renewed.a.parked(approval, PLAN);
    expect(renewed.sent.map((e) => e.outcome)).toEqual(['awaiting-approval']);
    const paused = attempt({ parked: { reason: 'approval', why: approval.why } });
    paused.a.parked({ reason: 'paused', why: 'paused by alice: storage maintenance' }, PLAN);
    expect(paused.sent).toMatchObject([{ outcome: 'parked', message: 'parked (paused): paused by alice: storage maintenance' }]);
    const again = attempt({ parked: { reason: 'paused', why: 'paused by alice: storage maintenance' } });
    again.a.parked({ reason: 'paused', why: 'paused by alice: storage maintenance' }, PLAN);
    expect(again.sent).toEqual([]);
  });
});
