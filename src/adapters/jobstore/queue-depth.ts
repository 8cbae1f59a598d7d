import { labelValue } from '../observability/text-format.ts';
import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import { queueKeys } from './bullmq-keys.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import type { RedisConnection } from '../redis/redis.ts';

// volume_medic_queue_jobs{queue,node,state}: the jobs on each queue the receiver has stored work
// on (<prefix>:vm:queues), read from BullMQ's keys at scrape time by the one replica that exports
// fleet-wide series. Only queues holding jobs get series, so a fleet of thousands of idle nodes
// costs a few series, not thousands; a dashboard shows the top-k. Each queue's keys share one hash
// tag (its node), so one pipeline per queue works on a Cluster too.

const QUEUE_JOBS_METRIC = 'volume_medic_queue_jobs';

/** Queues read at once (a fleet of 5,000 nodes is read in batches, not 5,000 calls at a time). */
const BATCH = 200;
const STATES = ['waiting', 'active', 'delayed'] as const;
type State = (typeof STATES)[number];

/** BullMQ's keys of one queue, counted: waiting jobs sit in wait, paused or prioritized. */
async function countsOf(redis: RedisConnection, prefix: string, queue: string): Promise<Record<State, number>> {
  const k = queueKeys(prefix, queue);
  const p = redis.pipeline();
  p.llen(k.wait);
  p.llen(k.paused);
  p.zcard(k.prioritized);
  p.llen(k.active);
  p.zcard(k.delayed);
  const answers = (await p.exec()) ?? [];
  // A refused or failed count (an ACL without LLEN) fails the whole reading: no series rather
  // than a wrong zero.
  const n = answers.map(([err, v]) => {
    if (err) throw err;
    return Number(v) || 0;
  });
  return { waiting: (n[0] ?? 0) + (n[1] ?? 0) + (n[2] ?? 0), active: n[3] ?? 0, delayed: n[4] ?? 0 };
}

export async function queueDepths(redis: RedisConnection, prefix: string): Promise<Map<string, Record<State, number>>> {
  const queues = (await redis.smembers(knownQueuesKey(prefix))).sort();
  const out = new Map<string, Record<State, number>>();
  for (let i = 0; i < queues.length; i += BATCH) {
    await Promise.all(
      queues.slice(i, i + BATCH).map(async (queue) => {
        const counts = await countsOf(redis, prefix, queue);
        if (counts.waiting + counts.active + counts.delayed > 0) out.set(queue, counts);
      }),
    );
  }
  return out;
}

export function queueDepthExposition(depths: ReadonlyMap<string, Record<State, number>>): string {
  const lines = [
    `# HELP ${QUEUE_JOBS_METRIC} Jobs on a queue by state (waiting, active, delayed); only queues holding jobs have series (node: the node queue's node).`,
    `# TYPE ${QUEUE_JOBS_METRIC} gauge`,
  ];
  for (const [queue, counts] of depths) {
    const node = nodeOfQueue(queue);
    const labels = `queue="${labelValue(queue)}"${node !== undefined ? `,node="${labelValue(node)}"` : ''}`;
    for (const state of STATES) lines.push(`${QUEUE_JOBS_METRIC}{${labels},state="${state}"} ${counts[state]}`);
  }
  return `${lines.join('\n')}\n`;
}
