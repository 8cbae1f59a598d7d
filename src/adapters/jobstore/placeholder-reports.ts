import { PlaceholderReport } from '../../core/catalogue/placeholder-report.ts';
import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import { agentSeen } from './agent-presence.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Where a node agent leaves its placeholder report (src/core/catalogue/placeholder-report.ts):
// under its own queue's keys, the only keys its per-node Redis user may write
// (src/adapters/redis/node-user-acl.ts), with no lifetime: a placeholder outlives an agent that
// stopped, and a report that lapsed would say "none" exactly when nobody is left to release it.
// An agent with nothing attached reports that too, so a missing report is "not known", never
// "none": a node whose agent shows a sign of life (agent-presence.ts) without a report (it has
// not reported since it started, or Redis lost the key) is named as such. The receiver reads two
// keys per node queue (chunks of commands on a single Redis, one queue a call on a Cluster, where
// each queue is its own slot).

export const placeholderReportKey = (prefix: string, queue: string): string => `${prefix}:${queue}:vm:placeholders`;

/** Replaces the node's report. */
export async function writePlaceholderReport(redis: RedisConnection, prefix: string, queue: string, report: PlaceholderReport): Promise<void> {
  await redis.set(placeholderReportKey(prefix, queue), JSON.stringify(report));
}

export type ReadReport = { queue: string; node: string } & ({ report: PlaceholderReport } | { invalid: string });

/** The reports of the node queues among `queues` that have one; a value that does not parse is named, not dropped. */
export async function readPlaceholderReports(redis: RedisConnection, prefix: string, queues: readonly string[]): Promise<ReadReport[]> {
  const nodes = queues.flatMap((queue) => {
    const node = nodeOfQueue(queue);
    return node === undefined ? [] : [{ queue, node }];
  });
  // GETs, not MGET (not in the receiver's ACL): a chunk's are sent together, one round trip's worth.
  const values = await inLanes(nodes, laneShape(redis, {}, { chunk: 250, parallel: 1 }), (chunk) =>
    Promise.all(
      chunk.map(async (n) => {
        const raw = await redis.get(placeholderReportKey(prefix, n.queue));
        return raw === null && (await agentSeen(redis, prefix, n.queue)) ? NOT_REPORTED : raw;
      }),
    ),
  );
  const out: ReadReport[] = [];
  nodes.forEach((n, i) => {
    const raw = values[i];
    if (raw === null || raw === undefined) return;
    out.push({
      ...n,
      ...(raw === NOT_REPORTED
        ? { invalid: 'its agent runs but has not reported its placeholders yet (it does within 30 s of starting)' }
        : parse(raw, n.node)),
    });
  });
  return out;
}

const NOT_REPORTED = Symbol('not reported');

function parse(raw: string, node: string): { report: PlaceholderReport } | { invalid: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { invalid: 'not JSON' };
  }
  const r = PlaceholderReport.safeParse(value);
  if (!r.success)
    return {
      invalid: r.error.issues
        .map((i) => `${i.path.join('.') || '(report)'}: ${i.message}`)
        .join('; ')
        .slice(0, 300),
    };
  // A node's user can write only its own queue: a report naming another node is not believed.
  if (r.data.node !== node) return { invalid: `the report names node ${r.data.node}, but it is under the queue of ${node}` };
  return { report: r.data };
}
