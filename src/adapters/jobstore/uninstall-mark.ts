import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import type { RedisConnection } from '../redis/redis.ts';

// The mark the chart's pre-delete check leaves on every node queue once the uninstall may go on
// (POST /v1/uninstall/arm): the node agents read it (their own queue's key, all their Redis user
// may read) with each placeholder report, and one that stops while it is there, configured with
// REMOVE_HOST_STATE_ON_UNINSTALL, removes its host state (workers/node-agent/host-state-removal.ts).
// It lapses by itself: an uninstall that did not happen leaves no mark for a later rolling update.

export const UNINSTALL_MARK_TTL_MS = 15 * 60_000;

export const uninstallMarkKey = (prefix: string, queue: string): string => `${prefix}:${queue}:vm:uninstalling`;

/** Marks every node queue among `queues`; returns how many. */
export async function markUninstall(redis: RedisConnection, prefix: string, queues: readonly string[], mark: { at: string; by: string }): Promise<number> {
  const nodes = queues.filter((q) => nodeOfQueue(q) !== undefined);
  const value = JSON.stringify(mark);
  await inLanes(nodes, laneShape(redis, {}, { chunk: 250, parallel: 1 }), (chunk) =>
    Promise.all(chunk.map((q) => redis.set(uninstallMarkKey(prefix, q), value, 'PX', UNINSTALL_MARK_TTL_MS))),
  );
  return nodes.length;
}

/** Whether the node's queue carries the mark now. */
export async function uninstallMarked(redis: RedisConnection, prefix: string, queue: string): Promise<boolean> {
  return (await redis.exists(uninstallMarkKey(prefix, queue))) > 0;
}
