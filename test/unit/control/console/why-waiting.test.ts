import { describe, expect, it } from 'vitest';
import { whyWaiting } from '../../../../src/control/console/why-waiting.ts';

const job = (over: Partial<Parameters<typeof whyWaiting>[0]> = {}): Parameters<typeof whyWaiting>[0] => ({
  state: 'waiting',
  queue: 'vm-node-{n1}',
  node: 'n1',
  runbook: 'residual-multipath-cleanup',
  attemptsMade: 0,
  ...over,
});
const noPauses = { nodes: {}, runbooks: {} };

describe('why a job that is not parked waits', () => {
  it('says no agent when its queue has jobs and no sign of an agent', () => {
    expect(whyWaiting(job(), { agentOf: () => 'missing' })).toEqual({
      reason: 'no agent',
      why: expect.stringMatching(/^no node agent on n1 has shown itself lately/),
    });
    expect(whyWaiting(job({ queue: 'vm-cluster-{cluster}', node: '(cluster)' }), { agentOf: () => 'missing' })?.why).toMatch(/^no cluster worker/);
  });

  it('says which pause holds it, and that the agent parks it when it takes it', () => {
    expect(whyWaiting(job(), { agentOf: () => 'seen', pauses: { ...noPauses, nodes: { n1: { by: 'kim', at: 'x' } } } as never })).toEqual({
      reason: 'paused',
      why: 'node n1 is paused: the agent of n1 will park it when it takes it',
    });
    expect(whyWaiting(job(), { agentOf: () => 'seen', pauses: { ...noPauses, cluster: { by: 'kim', at: 'x' } } as never })?.why).toMatch(
      /^the cluster is paused/,
    );
  });

  it('says queued when an agent is there, and backoff for a retry that waits', () => {
    expect(whyWaiting(job(), { agentOf: () => 'seen', pauses: noPauses as never })).toEqual({
      reason: 'queued',
      why: 'waiting for the agent of n1 to take it',
    });
    expect(whyWaiting(job({ state: 'delayed', attemptsMade: 2, failedReason: 'multipath -f timed out' }), { agentOf: () => 'seen' })).toEqual({
      reason: 'backoff',
      why: 'attempt 2 failed (multipath -f timed out); tried again after a backoff',
    });
  });

  it('leaves parked, running and finished jobs alone (a parked job says why itself)', () => {
    expect(whyWaiting(job({ waiting: { reason: 'approval', why: 'x' } }), { agentOf: () => 'missing' })).toBeUndefined();
    for (const state of ['active', 'completed', 'failed']) expect(whyWaiting(job({ state }), { agentOf: () => 'missing' })).toBeUndefined();
  });
});
