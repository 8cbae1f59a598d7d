import type { Pauses } from '../../adapters/controls/controls-store.ts';
import type { AgentState } from './agent-state.ts';
import type { Incident } from './incident.ts';

// Why a job that has not finished is not running, for a row of the incidents list. A job the
// engine parked says so itself (Incident.waiting: approval, pause, breaker, evidence maturing, another tool on its node).
// One that no worker has taken yet says nothing, so the list showed blank mode, outcome and
// summary for a whole storm on nodes without an agent: this answers for those, from what the
// page already has (the fleet scan's agent state per queue, the pauses).

export interface WaitContext {
  /** The agent state of each queue (the fleet scan: src/control/console/agent-state.ts). */
  agentOf: (queue: string) => AgentState | undefined;
  pauses?: Pauses;
}

type WaitReason = 'no agent' | 'paused' | 'queued' | 'backoff';

export interface WaitView {
  reason: WaitReason;
  why: string;
}

/** The reason a job that is not parked waits, or undefined when it is not waiting (or parked: it says why itself). */
export function whyWaiting(
  i: Pick<Incident, 'state' | 'waiting' | 'queue' | 'node' | 'runbook' | 'attemptsMade' | 'failedReason'>,
  c: WaitContext,
): WaitView | undefined {
  if (i.waiting) return undefined;
  const where = i.node === '(cluster)' ? 'the cluster worker' : `the agent of ${i.node}`;
  if (i.state === 'delayed' && i.attemptsMade > 0) {
    return {
      reason: 'backoff',
      why: `attempt ${i.attemptsMade} failed${i.failedReason ? ` (${i.failedReason})` : ''}; tried again after a backoff`,
    };
  }
  if (i.state !== 'waiting' && i.state !== 'prioritized' && i.state !== 'paused') return undefined;
  if (c.agentOf(i.queue) === 'missing') {
    return {
      reason: 'no agent',
      why: `no ${i.node === '(cluster)' ? 'cluster worker' : `node agent on ${i.node}`} has shown itself lately: the job waits until one runs there`,
    };
  }
  const p = c.pauses;
  const paused = p?.cluster ? 'the cluster' : p?.nodes[i.node] ? `node ${i.node}` : p?.runbooks[i.runbook] ? `runbook ${i.runbook}` : undefined;
  if (paused) return { reason: 'paused', why: `${paused} is paused: ${where} will park it when it takes it` };
  return { reason: 'queued', why: `waiting for ${where} to take it` };
}
