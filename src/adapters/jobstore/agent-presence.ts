import { queueKeys } from './bullmq-keys.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Is a worker serving its queue, and what waits there? Read with ONE script call per queue (every
// key of a queue shares the node's hash tag, src/core/catalogue/queues.ts, so this runs on a Cluster
// too). The sign of life is the worker's own presence key, renewed every half interval with a
// lifetime of two (workers/engine/presence-beat.ts): a live worker's key is absent only when two
// renewals in a row were late, never between two of them. BullMQ's `stalled-check` key (SET with
// a TTL of exactly one stalled interval at each check) also counts, for the workers of a release
// without the presence key; alone it lapses between its expiry and the next check, longer on a
// loaded machine, which read as an agent flickering away. BullMQ's own getWorkers needs CLIENT
// LIST (O(clients), and not in our Redis ACL).
//
// The cost (bench/no-agent.ts): one EVALSHA per known node queue per check, reading the queue's
// oldest waiting jobs only (at most MAX_JOBS of each).

/** The key a running worker renews while it serves `queue` (one per queue: under the queue's hash tag and its Redis user's keys). */
export const presenceKey = (prefix: string, queue: string): string => `${prefix}:${queue}:vm:seen`;

/** How long one renewal of the presence key lasts, for a worker that renews it every `intervalMs / 2`. */
export const presenceTtlMs = (intervalMs: number): number => 2 * intervalMs;

/** A job that waits to be taken: in `wait`, or `delayed` and already due (only a worker promotes those). */
export interface WaitingJob {
  id: string;
  runbook: string;
  /** Since when it waits for an agent (ms): its creation or its last start, or when it fell due. */
  since: number;
}

export interface QueuePresence {
  /** A worker showed a sign of life on this queue (its presence key, or BullMQ's stalled check). */
  agentSeen: boolean;
  /** The oldest waiting jobs, oldest first, at most MAX_JOBS. */
  waiting: WaitingJob[];
}

/** Waiting jobs read per queue and check: the oldest ones, enough for a node's queue. */
const MAX_JOBS = 50;

export const AGENT_PRESENCE = luaScript(
  'volumeMedicAgentPresence',
  `-- volume-medic: agent presence and the oldest waiting jobs of one queue (src/adapters/jobstore/agent-presence.ts)
-- KEYS: wait, delayed, stalled-check, presence. ARGV: the queue's key prefix ("<prefix>:<queue>:"), max jobs, max due time (ms).
local seen = math.min(1, redis.call('EXISTS', KEYS[3], KEYS[4]))
local max = tonumber(ARGV[2])
local out = {}
-- wait: LPUSH adds, workers take from the right, so the oldest are at the right end.
local ids = redis.call('LRANGE', KEYS[1], -max, -1)
for i = #ids, 1, -1 do
  local h = redis.call('HMGET', ARGV[1] .. ids[i], 'name', 'timestamp', 'processedOn')
  out[#out + 1] = ids[i]
  out[#out + 1] = h[1] or ''
  out[#out + 1] = math.max(tonumber(h[2] or '0') or 0, tonumber(h[3] or '0') or 0)
end
-- delayed: score = due time * 0x1000 + a counter.
local due = redis.call('ZRANGEBYSCORE', KEYS[2], 0, (tonumber(ARGV[3]) + 1) * 0x1000 - 1, 'WITHSCORES', 'LIMIT', 0, max)
for i = 1, #due, 2 do
  out[#out + 1] = due[i]
  out[#out + 1] = redis.call('HGET', ARGV[1] .. due[i], 'name') or ''
  out[#out + 1] = math.floor(tonumber(due[i + 1]) / 0x1000)
end
return {seen, out}
`,
  4,
);

/** Presence and waiting jobs of `queue` (a full BullMQ queue name) under `prefix`, as of `now`. */
export async function queuePresence(redis: RedisConnection, prefix: string, queue: string, now: number): Promise<QueuePresence> {
  const k = queueKeys(prefix, queue);
  const reply = await scriptOn(redis, AGENT_PRESENCE)(k.wait, k.delayed, k.stalledCheck, presenceKey(prefix, queue), k.base, String(MAX_JOBS), String(now));
  // Parsed again: what Redis holds is not trusted to have our shape.
  if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) throw new Error(`agent presence of ${queue}: unexpected reply`);
  const flat = reply[1] as unknown[];
  const waiting: WaitingJob[] = [];
  for (let i = 0; i + 2 < flat.length; i += 3) {
    const id = flat[i];
    const runbook = flat[i + 1];
    const since = Number(flat[i + 2]);
    if (typeof id !== 'string' || typeof runbook !== 'string' || !Number.isFinite(since)) continue;
    waiting.push({ id, runbook, since });
  }
  waiting.sort((a, b) => a.since - b.since);
  return { agentSeen: reply[0] === 1, waiting: waiting.slice(0, MAX_JOBS) };
}

/** Whether a worker showed a sign of life on `queue` (one EXISTS of the queue's two keys). */
export async function agentSeen(redis: RedisConnection, prefix: string, queue: string): Promise<boolean> {
  return (await redis.exists(queueKeys(prefix, queue).stalledCheck, presenceKey(prefix, queue))) > 0;
}
