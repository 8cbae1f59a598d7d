import type { QueueScan } from './queue-scan.ts';

// Is a queue's agent there? The one place the console decides it (swap this function alone for a
// better signal). The signal is the one issue 22's no-agent check uses (src/queues/agent-presence.ts)
// and costs nothing extra: every BullMQ worker, our node agents and the cluster worker
// included, sets its queue's `stalled-check` key with a TTL of its stalled interval
// (LOCK_DURATION_MS) each time it checks for stalled jobs, i.e. once per interval while it runs.
// So the key's absence means no worker has run on that queue for a whole interval. That alone
// says nothing for an idle queue (no jobs: nobody needs the agent), so "missing" needs work that
// waits for it: jobs waiting, or jobs active with nobody left to finish them.
//   seen     a worker checked the queue within its interval
//   missing  no worker within the interval, and jobs wait (or are stuck active) on the queue
//   idle     no worker seen, nothing waits: unknown, and harmless
// This is one reading: the key is briefly absent between its expiry and a live worker's next
// check, so a row can show MISSING for that moment. The verdict that acts (the NoAgent Event,
// volume_medic_jobs_without_agent, failing the job) is the cluster worker's, which asks for
// absence longer than a grace (src/queues/no-agent-watch.ts).

export type AgentState = 'seen' | 'missing' | 'idle';

export function agentState(q: QueueScan): AgentState {
  // -1: the key exists without a TTL (not BullMQ's way, but someone is there).
  if (q.workerCheckTtlMs > 0 || q.workerCheckTtlMs === -1) return 'seen';
  return q.waiting + q.prioritized + q.active > 0 ? 'missing' : 'idle';
}
