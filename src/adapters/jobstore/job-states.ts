import { queueKeys } from './bullmq-keys.ts';
import { inLanes, laneShape } from '../redis/in-lanes.ts';
import type { RedisConnection } from '../redis/redis.ts';
import type { IndexEntry } from './incident-index.ts';

// The state of many index entries' jobs at once, for a storm's counts by state: one script call
// per chunk of queues on a single Redis (a queue's keys and its jobs' hashes are declared as KEYS,
// so the ACL's key patterns apply), one queue per call on a Cluster (each queue its own slot).
// Per job: is it in the queue's completed, failed, delayed or active set (ZSCORE, or LPOS on the
// short active list); else waiting while its hash exists, else gone (retention). A delayed job the
// engine parked (its progress says so) counts as parked, as the console's lists count it.

export type JobStateName = 'completed' | 'failed' | 'parked' | 'delayed' | 'active' | 'waiting' | 'gone';

const STATES: readonly JobStateName[] = ['completed', 'failed', 'parked', 'delayed', 'active', 'waiting', 'gone'];

// KEYS per queue: completed, failed, delayed, active, then the hashes of its jobs.
// ARGV: per queue, the number of its jobs and then their ids. Answers one state index per job.
const SCRIPT = `
local out = {}
local k, a = 1, 1
while a <= #ARGV do
  local n = tonumber(ARGV[a]); a = a + 1
  local completed, failed, delayed, active = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  k = k + 4
  for i = 1, n do
    local id, hash = ARGV[a], KEYS[k]
    a = a + 1; k = k + 1
    local s = 6
    if redis.call('ZSCORE', completed, id) then s = 0
    elseif redis.call('ZSCORE', failed, id) then s = 1
    elseif redis.call('ZSCORE', delayed, id) then
      local p = redis.call('HGET', hash, 'progress')
      if p and string.find(p, '"parked"', 1, true) then s = 2 else s = 3 end
    elseif redis.call('LPOS', active, id) then s = 4
    elseif redis.call('EXISTS', hash) == 1 then s = 5 end
    out[#out + 1] = s
  end
end
return out`;

/** The state of each entry's job, in the order given. */
export async function jobStates(
  redis: RedisConnection,
  prefix: string,
  entries: readonly IndexEntry[],
  o: { chunk?: number; parallel?: number } = {},
): Promise<JobStateName[]> {
  const byQueue = new Map<string, IndexEntry[]>();
  for (const e of entries) {
    const list = byQueue.get(e.queue);
    if (list) list.push(e);
    else byQueue.set(e.queue, [e]);
  }
  const groups = [...byQueue];
  // A chunk: about 250 jobs' worth of queues on a single Redis.
  const read = await inLanes(groups, laneShape(redis, o, { chunk: 250, parallel: 1 }), async (chunk) => {
    const keys: string[] = [];
    const args: string[] = [];
    for (const [queue, jobs] of chunk) {
      const k = queueKeys(prefix, queue);
      keys.push(k.completed, k.failed, k.delayed, k.active, ...jobs.map((j) => k.job(j.id)));
      args.push(String(jobs.length), ...jobs.map((j) => j.id));
    }
    const raw = await redis.eval(SCRIPT, keys.length, ...keys, ...args);
    const total = chunk.reduce((n, [, jobs]) => n + jobs.length, 0);
    if (!Array.isArray(raw) || raw.length !== total)
      throw new Error(`job states: expected ${total} answers, got ${Array.isArray(raw) ? raw.length : typeof raw}`);
    const states = raw.map((s) => STATES[Number(s)] ?? 'gone');
    let i = 0;
    return chunk.map(([, jobs]) => jobs.map((j) => [j.member, states[i++]!] as const));
  });
  const stateOf = new Map(read.flat());
  return entries.map((e) => stateOf.get(e.member) ?? 'gone');
}
