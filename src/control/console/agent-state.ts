import type { QueueScan } from '../../adapters/jobstore/queue-scan.ts';

// Is a queue's agent there? The one place the console decides it, from the worker's signs of life
// that the queue scan reads (src/adapters/jobstore/agent-presence.ts: its presence key, renewed every half
// interval, or BullMQ's stalled check). That alone says nothing for an idle queue (no jobs: nobody
// needs the agent), so "missing" needs work that waits for it: jobs waiting, or jobs active with
// nobody left to finish them.
//   seen     a sign of life is there
//   missing  none, and jobs wait (or are stuck active) on the queue
//   idle     none, nothing waits: unknown, and harmless
// This is one reading. The verdict that acts (the NoAgent Event, volume_medic_jobs_without_agent,
// failing the job) is the cluster worker's, which asks for absence longer than a grace
// (workers/cluster-worker/no-agent-watch.ts).

export type AgentState = 'seen' | 'missing' | 'idle';

export function agentState(q: QueueScan): AgentState {
  // -1: the key exists without a TTL (not BullMQ's way, but someone is there).
  if (q.workerCheckTtlMs > 0 || q.workerCheckTtlMs === -1) return 'seen';
  return q.waiting + q.prioritized + q.active > 0 ? 'missing' : 'idle';
}
