import { presenceKey } from './agent-presence.ts';
import { queueKeys } from './bullmq-keys.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Every queue's job counts and its worker's last sign of life, for the console's counts and the
// fleet overview. At 5,000 node queues, BullMQ's getJobCounts costs one script call
// per queue (5,000 per refresh, each a reply to parse); here one script reads the lengths of up to
// `chunk` queues (9 keys each: one LLEN or ZCARD per state and the PTTLs of the worker's signs of
// life, src/adapters/jobstore/agent-presence.ts) in one call, so a refresh is 5,000 / 250 = 20 calls. A script may only touch
// keys of one slot on a Redis Cluster, and each queue has its own hash tag there: the chunk is one
// queue per call on a Cluster (the same script, many calls in flight).
//
// The keys are BullMQ's (`<prefix>:<queue>:wait`, ...), declared to the script as KEYS, so the
// ACL's key patterns apply to them as to BullMQ's own scripts. Numbers only come back.

export interface QueueScan {
  queue: string;
  waiting: number;
  paused: number;
  active: number;
  delayed: number;
  prioritized: number;
  completed: number;
  failed: number;
  /**
   * Milliseconds left on the longer-lived of the worker's signs of life (its presence key, BullMQ's
   * `stalled-check` key: src/adapters/jobstore/agent-presence.ts); -1: one exists without a TTL; -2: neither
   * exists, no worker showed itself lately (src/control/console/agent-state.ts).
   */
  workerCheckTtlMs: number;
}

/** The keys the script reads per queue, in its order. */
const keysOf = (prefix: string, queue: string): string[] => {
  const k = queueKeys(prefix, queue);
  return [k.wait, k.paused, k.active, k.delayed, k.prioritized, k.completed, k.failed, k.stalledCheck, presenceKey(prefix, queue)];
};

const SCRIPT = `
local out = {}
for b = 0, #KEYS - 1, 9 do
  out[#out + 1] = redis.call('LLEN', KEYS[b + 1])
  out[#out + 1] = redis.call('LLEN', KEYS[b + 2])
  out[#out + 1] = redis.call('LLEN', KEYS[b + 3])
  out[#out + 1] = redis.call('ZCARD', KEYS[b + 4])
  out[#out + 1] = redis.call('ZCARD', KEYS[b + 5])
  out[#out + 1] = redis.call('ZCARD', KEYS[b + 6])
  out[#out + 1] = redis.call('ZCARD', KEYS[b + 7])
  local check, seen = redis.call('PTTL', KEYS[b + 8]), redis.call('PTTL', KEYS[b + 9])
  if check == -1 or seen == -1 then out[#out + 1] = -1 else out[#out + 1] = math.max(check, seen) end
end
return out`;

export interface ScanOptions {
  /** Queues per script call on a single Redis or Sentinel (default 250: ~2,000 O(1) calls, well under a millisecond of Redis). */
  chunk?: number;
  /**
   * Script calls in flight at once (default 1 on a single Redis: a page's own commands wait behind
   * at most one chunk; 32 on a Cluster, where each call is one queue's).
   */
  parallel?: number;
}

export async function scanQueues(redis: RedisConnection, prefix: string, names: readonly string[], o: ScanOptions = {}): Promise<QueueScan[]> {
  return inLanes(names, laneShape(redis, o, { chunk: 250, parallel: 1 }), async (qs) => {
    const keys = qs.flatMap((q) => keysOf(prefix, q));
    return parse(qs, await redis.eval(SCRIPT, keys.length, ...keys));
  });
}

/** Numbers the script answers per queue: seven counts and one presence TTL. */
const PER_QUEUE = 8;

function parse(queues: readonly string[], raw: unknown): QueueScan[] {
  if (!Array.isArray(raw) || raw.length !== queues.length * PER_QUEUE)
    throw new Error(`queue scan: expected ${queues.length * PER_QUEUE} numbers, got ${Array.isArray(raw) ? raw.length : typeof raw}`);
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return queues.map((queue, i) => {
    const b = i * PER_QUEUE;
    return {
      queue,
      waiting: n(raw[b]),
      paused: n(raw[b + 1]),
      active: n(raw[b + 2]),
      delayed: n(raw[b + 3]),
      prioritized: n(raw[b + 4]),
      completed: n(raw[b + 5]),
      failed: n(raw[b + 6]),
      workerCheckTtlMs: typeof raw[b + 7] === 'number' ? raw[b + 7] : -2,
    };
  });
}
