import { describe, expect, it } from 'vitest';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import type { StoredJob } from '../../../../src/core/jobs/job-store.ts';
import { type JobView, remediationStatus, statusChanged } from '../../../../src/control/watches/remediation-status.ts';

// What a VolumeMedicRemediation's status says for each state of its job: NodeHealthCheck reads
// Succeeded (False: next remediation now; True: wait for the node until the timeout).

const T0 = Date.parse('2026-12-07T13:00:00Z');
const ID = 'nhc_6f1c2d3e_0123456789ab';
const Q = 'vm-node-{worker-1}';
const job = (over: Partial<StoredJob>): StoredJob => ({
  id: ID,
  name: 'residual-multipath-cleanup',
  data: {},
  timestamp: T0,
  attemptsMade: 1,
  attemptsStarted: 1,
  attempts: 3,
  progress: {},
  ...over,
});
const result = (outcome: RunbookResult['outcome'], refusals: string[] = []): RunbookResult => ({
  runbook: 'residual-multipath-cleanup',
  mode: outcome === 'planned' ? 'dry-run' : 'enforce',
  outcome,
  summary: `outcome ${outcome}`,
  facts: {},
  plan: {},
  refusals,
  steps: [],
  commands: [],
  ranOn: 'worker-1',
});
const stored = (state: Extract<JobView, { kind: 'stored' }>['state'], j?: StoredJob): JobView => ({ kind: 'stored', jobId: ID, queue: Q, state, job: j });
const conditions = (v: JobView) => remediationStatus(v, undefined, T0).conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('a VolumeMedicRemediation status from its job', () => {
  it("stays Queued, not final, without a job while the node's agent does not run what the job needs (the watch asks again)", () => {
    const s = remediationStatus({ kind: 'held', message: "node worker-1's agent does not run node-healthcheck yet" }, undefined, T0);
    expect(s.phase).toBe('Queued');
    expect(s.jobId).toBeUndefined();
    expect(conditions({ kind: 'held', message: 'x' })).toEqual(['Processing=True/JobQueued', 'Succeeded=Unknown/InProgress']);
  });

  it.each([
    ['waiting', 'Queued', 'JobQueued'],
    ['prioritized', 'Queued', 'JobQueued'],
    ['delayed', 'Parked', 'JobParked'],
    ['active', 'Running', 'JobRunning'],
  ] as const)('a %s job: %s, Processing True, Succeeded Unknown', (state, phase, reason) => {
    const s = remediationStatus(stored(state), undefined, T0);
    expect(s).toMatchObject({ phase, jobId: ID, queue: Q, lastUpdateTime: '2026-12-07T13:00:00.000Z' });
    expect(conditions(stored(state))).toEqual([`Processing=True/${reason}`, 'Succeeded=Unknown/InProgress']);
  });

  it.each([
    ['succeeded', 'Succeeded', 'True/RemediationSucceeded'],
    ['nothing-to-do', 'Failed', 'False/NothingToClean'],
    ['planned', 'Failed', 'False/DryRun'],
    ['refused', 'Failed', 'False/Refused'],
    ['failed', 'Failed', 'False/RemediationFailed'],
    ['not-implemented', 'Failed', 'False/RemediationFailed'],
  ] as const)('a completed job whose outcome is %s: %s, Succeeded %s', (outcome, phase, succeeded) => {
    const v = stored('completed', job({ returnvalue: result(outcome, outcome === 'refused' ? ['map dm-3 has a live path'] : []) }));
    expect(remediationStatus(v, undefined, T0).phase).toBe(phase);
    expect(conditions(v)).toEqual([`Processing=False/${succeeded.split('/')[1]}`, `Succeeded=${succeeded}`]);
    if (outcome === 'refused') expect(remediationStatus(v, undefined, T0).conditions[1]!.message).toBe(`job ${ID}: outcome refused (map dm-3 has a live path)`);
  });

  it('a job failed for good, gone from the store, or completed without a readable result: Succeeded False, saying which', () => {
    expect(conditions(stored('failed', job({ failedReason: 'PermanentError: map in use' })))[1]).toBe('Succeeded=False/JobFailed');
    expect(remediationStatus(stored('failed', job({ failedReason: 'PermanentError: map in use' })), undefined, T0).conditions[1]!.message).toContain(
      'map in use',
    );
    expect(conditions(stored('unknown'))[1]).toBe('Succeeded=False/JobGone');
    expect(conditions(stored('completed', job({ returnvalue: { not: 'a result' } })))[1]).toBe('Succeeded=False/ResultUnreadable');
  });

  it('no job (an unknown node): Skipped, no job id; a job withdrawn on NHC timeout: Failed with its id', () => {
    const none = remediationStatus({ kind: 'none', reason: 'NodeNotFound', message: 'the cluster has no Node worker-9' }, undefined, T0);
    expect(none).toMatchObject({ phase: 'Skipped' });
    expect(none.jobId).toBeUndefined();
    expect(none.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual(['Processing=False/NodeNotFound', 'Succeeded=False/NodeNotFound']);
    const withdrawn = remediationStatus({ kind: 'withdrawn', jobId: ID, queue: Q, reason: 'TimedOutByNHC', message: 'm' }, undefined, T0);
    expect(withdrawn).toMatchObject({ phase: 'Failed', jobId: ID });
  });

  it('keeps a condition’s lastTransitionTime while its status holds, and moves it when the status changes', () => {
    const first = remediationStatus(stored('waiting'), undefined, T0);
    const running = remediationStatus(stored('active'), first, T0 + 60_000);
    expect(running.conditions.map((c) => c.lastTransitionTime)).toEqual(['2026-12-07T13:00:00.000Z', '2026-12-07T13:00:00.000Z']);
    const done = remediationStatus(stored('completed', job({ returnvalue: result('succeeded') })), running, T0 + 120_000);
    expect(done.conditions.map((c) => c.lastTransitionTime)).toEqual(['2026-12-07T13:02:00.000Z', '2026-12-07T13:02:00.000Z']);
  });

  it('tells a change apart from the same status written later (no write, no new resourceVersion, for a resync that finds nothing new)', () => {
    const a = remediationStatus(stored('waiting'), undefined, T0);
    expect(statusChanged(a, remediationStatus(stored('waiting'), a, T0 + 15_000))).toBe(false);
    expect(statusChanged(a, remediationStatus(stored('active'), a, T0 + 15_000))).toBe(true);
    expect(statusChanged(undefined, a)).toBe(true);
  });
});
