import type { Job, Queue } from 'bullmq';
import { CLUSTER_QUEUE, nodeOfQueue } from '../../core/catalogue/queues.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Where job `id` is, for the API, the console and a retry: on the queues something recorded it
// under first (the console's incident index, a parked job's record: `likely`), then on every
// other known queue (a job nothing recorded: trimmed from the index, stored before it, or by a
// node agent, whose Redis user cannot write the index). One place, so a lookup costs one queue
// read wherever the job was recorded, instead of one per known queue (5,000 at 5,000 nodes).

export interface FindJob {
  redis: RedisConnection;
  prefix: string;
  queue: (name: string) => Queue;
  /** Queues the job was recorded under, likeliest first; errors count as no hint. */
  likely?: (id: string) => Promise<readonly (string | undefined)[]>;
}

export interface Found {
  queue: string;
  /** The queue's handle (o.queue(queue)). */
  handle: Queue;
  job: Job;
  state: string;
}

export async function findJob(o: FindJob, id: string): Promise<Found | undefined> {
  const none: readonly (string | undefined)[] = [];
  const [likely, known] = await Promise.all([
    o.likely ? o.likely(id).catch(() => none) : Promise.resolve(none),
    o.redis.smembers(knownQueuesKey(o.prefix)),
  ]);
  const hinted = likely.filter((q): q is string => q !== undefined && (q === CLUSTER_QUEUE || nodeOfQueue(q) !== undefined));
  for (const name of new Set([...hinted, ...known.sort()])) {
    const q = o.queue(name);
    // State first, then the hash: read the other way round, a job finishing in between shows as
    // completed without its result. This way a finished job always carries what it wrote.
    const state = await q.getJobState(id);
    if (state === 'unknown') continue;
    const job = await q.getJob(id);
    if (job) return { queue: name, handle: q, job, state };
  }
  return undefined;
}
