import type { Job, RedisClient } from 'bullmq';
import { luaScript, scriptOn, type LuaScript } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';

// Many jobs, one script call. BullMQ adds a job with its `addStandardJob` Lua script,
// one EVALSHA per job; a webhook burst made one EVALSHA (and an HMGET) per job in a pipeline, and
// the per-command work (ioredis command objects and encoding, a Pipeline object per batch, Redis
// dispatching each call) was a large share of the receiver's and Redis's CPU per new job.
//
// This runs BullMQ's OWN script, unchanged, once per job inside ONE script call: the script's
// text, as BullMQ loaded it onto our connection, becomes the body of a Lua function
// `addStandardJob(KEYS, ARGV)` (its KEYS and ARGV are then that function's parameters), and a
// loop calls it for each job of the batch. Its keys and arguments are the ones BullMQ builds
// itself: `Job.addJob` is run against a client that records the script call instead of sending
// it. So the job hash, the wait list, the marker, the events and the handling of an existing id
// are BullMQ's, whatever its version; what this owns is only "call it N times". Before each add
// the loop reads the job's `timestamp` (did it exist, and since when): the HMGET that used to
// precede each add in the pipeline. test/int/adapters/jobstore/batch-add.int.test.ts compares every key a batch
// writes with what Queue.add writes for the same jobs.
//
// The same call can also record the jobs it stored as new in a sorted-set index (the console's
// incident index, src/adapters/jobstore/incident-index.ts): one round trip per batch instead of a second
// call with a ZADD (a large part of a 1-alert request: bench/README.md, "Figures behind the code").
// Only where one script may touch both the queues and the index: a single Redis or a Sentinel
// primary. On a Cluster the caller writes the index itself (a script may touch one slot only).

/** One job's call of BullMQ's add script: its name (`addStandardJob:<version>`), keys and arguments. */
export interface ScriptCall {
  command: string;
  keys: string[];
  args: (string | Buffer)[];
}

export interface BatchItem {
  /** The job's hash key, read before the add. */
  jobKey: string;
  call: ScriptCall;
  /** The job's member in the index, written if the job is stored as new (and an index is given). */
  member?: string;
}

/**
 * A sorted set the call adds every job it stores as new to (the item's `member`), scored `at`
 * (epoch ms) * 1000 + the job's place among the new jobs of the batch (mod 1000), then trimmed to
 * its newest `keep` members.
 */
export interface BatchIndex {
  key: string;
  keep: number;
  at: number;
  /** The index write failed (the jobs are stored all the same). */
  onError: (err: Error) => void;
}

export type BatchReply = { existingTimestamp: string | null; result: string | number } | { error: Error };

const ADD_COMMAND = /^addStandardJob:[0-9A-Za-z.+-]+$/;
const ADD_KEYS = 9;
const ADD_ARGS = 3;
/** Jobs per script call: a call blocks Redis while it runs, longer with each job, so big batches are split. */
export const MAX_JOBS_PER_CALL = 200;

/** Where BullMQ's add script takes the job's data (JSON text) among its arguments. */
const DATA_ARG = 1;
/** The data a Job is made with when the caller gives its text to captureAdd. */
export const DATA_PLACEHOLDER = Object.freeze({});

/**
 * The script call BullMQ would make to add `job`, without making it. Throws if BullMQ would not
 * use its standard add script (a delayed, prioritised or parent job: we never make those).
 * `dataText`: the job's data as the JSON text to store, already encoded by the caller (the
 * receiver's sealed jobs, src/core/trust/work.ts): the Job is then made with DATA_PLACEHOLDER as its
 * data and that text takes its place, so the data is not encoded a second time by BullMQ.
 */
export function captureAdd(job: Job, dataText?: string): ScriptCall {
  let call: ScriptCall | undefined;
  const recorder = {
    runCommand: (command: string, list: (string | Buffer)[]) => {
      call = { command, keys: list.slice(0, ADD_KEYS) as string[], args: list.slice(ADD_KEYS) };
      return Promise.resolve(job.id);
    },
  };
  // The recorder is called synchronously, before addJob's first await (as Queue.addBulk's
  // pipeline relies on); the returned promise resolves with the id we handed back.
  job.addJob(recorder as unknown as RedisClient).catch(() => {});
  if (!call) throw new Error(`BullMQ did not build an add for job ${job.id}`);
  if (!ADD_COMMAND.test(call.command) || call.keys.length !== ADD_KEYS || call.args.length !== ADD_ARGS) {
    throw new Error(
      `BullMQ built ${call.command} with ${call.keys.length} keys and ${call.args.length} arguments for job ${job.id}; the batch add supports only addStandardJob (${ADD_KEYS} keys, ${ADD_ARGS} arguments)`,
    );
  }
  if (dataText !== undefined) {
    // Only in the place BullMQ put the placeholder's encoding: a BullMQ that moved it fails here, loudly.
    if (job.data !== DATA_PLACEHOLDER || call.args[DATA_ARG] !== '{}')
      throw new Error(`BullMQ's add of job ${job.id} does not carry its data where the batch add expects it`);
    call.args[DATA_ARG] = dataText;
  }
  return call;
}

/** Per job in ARGV: queue block, job hash key, index member, then BullMQ's arguments. */
const PER_JOB = 3 + ADD_ARGS;
/** ARGV before the jobs: the index's `at` ('' = no index), its trim rank, the first job's place. */
const HEADER = 3;

/**
 * BullMQ's add script (`addStandardJob:<version>` and its text, as BullMQ defines it on a
 * connection) wrapped so one call runs it once per job.
 */
export function batchAddScript(command: string, addStandardJobLua: string): LuaScript {
  return luaScript(`volumeMedicAddJobs:${command.slice(command.indexOf(':') + 1)}`, batchScript(addStandardJobLua));
}

function batchScript(addStandardJobLua: string): string {
  return `-- volume-medic: BullMQ's addStandardJob, once per job (src/adapters/jobstore/batch-add.ts).
-- KEYS: BullMQ's ${ADD_KEYS} keys of each queue in the batch, in its order, one block per queue;
--   then, with an index, the index's key.
-- ARGV: the index's store time in ms ('' = no index), its trim rank (-(keep + 1)), the place of the
--   batch's first new job; then per job its queue's block number (1-based), the job hash key, its
--   index member, then BullMQ's ${ADD_ARGS} arguments.
-- Returns per job: the job's timestamp before the add (or nil), then BullMQ's result (or an
-- error); then, with an index, false or the index write's error.
local function addStandardJob(KEYS, ARGV)
${addStandardJobLua}
end
-- The read and the add of one job are isolated from the others: an error fails that job only.
local function addOne(jobKey, keys, argv)
  local existing = redis.call('HGET', jobKey, 'timestamp')
  return existing or false, addStandardJob(keys, argv)
end
local indexAt = ARGV[1]
local place = tonumber(ARGV[3])
local index = {}
local results = {}
for i = ${HEADER + 1}, #ARGV, ${PER_JOB} do
  local base = (tonumber(ARGV[i]) - 1) * ${ADD_KEYS}
  local keys = {}
  for j = 1, ${ADD_KEYS} do keys[j] = KEYS[base + j] end
  local ok, existing, res = pcall(addOne, ARGV[i + 1], keys, { ARGV[i + 3], ARGV[i + 4], ARGV[i + 5] })
  if ok then
    results[#results + 1] = existing
    results[#results + 1] = res
    -- Stored as new: it did not exist and BullMQ did not refuse it (a negative code).
    if indexAt ~= '' and not existing and not (type(res) == 'number' and res < 0) then
      -- The score as a string: at * 1000 + place, exact (a Lua number prints with 14 digits).
      index[#index + 1] = indexAt .. string.format('%03d', place % 1000)
      index[#index + 1] = ARGV[i + 2]
      place = place + 1
    end
  else
    results[#results + 1] = false
    results[#results + 1] = redis.error_reply(tostring(type(existing) == 'table' and existing.err or existing))
  end
end
if indexAt ~= '' then
  local indexKey = KEYS[#KEYS]
  local written = false
  if #index > 0 then
    -- The jobs are stored whatever happens here: an error is reported, not raised.
    written = redis.pcall('ZADD', indexKey, unpack(index))
    if type(written) ~= 'table' or not written.err then written = redis.pcall('ZREMRANGEBYRANK', indexKey, 0, ARGV[2]) end
  end
  results[#results + 1] = (type(written) == 'table' and written.err) and written or false
end
return results
`;
}

interface LoadedScript {
  lua: string;
}

const isLoadedScript = (v: unknown): v is LoadedScript => typeof v === 'object' && v !== null && 'lua' in v && typeof v.lua === 'string';

type ScriptFn = (numKeys: number, ...keysAndArgs: (string | Buffer)[]) => Promise<unknown>;

export class BatchAdd {
  private readonly redis: RedisConnection;
  /** addStandardJob:<version> -> our script of it. */
  private readonly defined = new Map<string, LuaScript>();

  constructor(redis: RedisConnection) {
    this.redis = redis;
  }

  /**
   * Adds the jobs, in order, in one script call per MAX_JOBS_PER_CALL jobs. One reply per item.
   * On a Cluster a script may touch one slot only: one call per queue (each queue is its own
   * hash tag, src/core/catalogue/queues.ts), sent together; ioredis routes each to its master.
   */
  async add(items: readonly BatchItem[], index?: BatchIndex): Promise<BatchReply[]> {
    if (!this.redis.isCluster) return this.addInOrder(items, index);
    if (index) throw new Error('on a Redis Cluster the batch add cannot write an index (another slot)');
    const byQueue = new Map<string, number[]>();
    items.forEach((it, i) => {
      const q = it.call.keys[0]!;
      const list = byQueue.get(q);
      if (list) list.push(i);
      else byQueue.set(q, [i]);
    });
    if (byQueue.size === 1) return this.addInOrder(items);
    const out: BatchReply[] = new Array<BatchReply>(items.length);
    // A master that fails fails its queues' jobs only.
    await Promise.all(
      [...byQueue.values()].map((indexes) =>
        this.addInOrder(indexes.map((i) => items[i]!)).then(
          (replies) =>
            indexes.forEach((i, j) => {
              out[i] = replies[j]!;
            }),
          (err: unknown) =>
            indexes.forEach((i) => {
              out[i] = { error: err instanceof Error ? err : new Error(String(err)) };
            }),
        ),
      ),
    );
    return out;
  }

  private async addInOrder(items: readonly BatchItem[], index?: BatchIndex): Promise<BatchReply[]> {
    const calls: Promise<BatchReply[]>[] = [];
    // The place of each call's first new job counts on from the previous call's jobs (unique scores).
    for (let i = 0; i < items.length; i += MAX_JOBS_PER_CALL) calls.push(this.call(items.slice(i, i + MAX_JOBS_PER_CALL), index, i));
    return (await Promise.all(calls)).flat();
  }

  private async call(items: readonly BatchItem[], index: BatchIndex | undefined, firstPlace: number): Promise<BatchReply[]> {
    const command = items[0]!.call.command;
    // A queue's keys go once per call, not once per job: a burst is mostly a few queues.
    const keys: string[] = [];
    const blocks = new Map<string, number>();
    const args: (string | Buffer)[] = index ? [String(Math.floor(index.at)), String(-(index.keep + 1)), String(firstPlace)] : ['', '0', '0'];
    for (const it of items) {
      if (it.call.command !== command) throw new Error(`one batch mixes ${command} and ${it.call.command}`);
      const k = it.call.keys;
      let block = blocks.get(k[0]!);
      if (block === undefined) {
        block = blocks.size + 1;
        blocks.set(k[0]!, block);
        keys.push(...k);
      } else {
        for (let j = 1; j < ADD_KEYS; j++) {
          if (keys[(block - 1) * ADD_KEYS + j] !== k[j]) throw new Error(`jobs of queue ${k[0]} came with different keys`);
        }
      }
      args.push(String(block), it.jobKey, it.member ?? '', ...it.call.args);
    }
    if (index) keys.push(index.key);
    const reply = await this.script(command)(keys.length, ...keys, ...args);
    if (!Array.isArray(reply) || reply.length !== items.length * 2 + (index ? 1 : 0)) {
      throw new Error(`the batch add answered ${Array.isArray(reply) ? `${reply.length} values` : typeof reply} for ${items.length} jobs`);
    }
    if (index) {
      const written: unknown = reply[items.length * 2];
      if (written instanceof Error) index.onError(written);
    }
    const out: BatchReply[] = [];
    for (let i = 0; i < items.length * 2; i += 2) {
      const existing: unknown = reply[i];
      const result: unknown = reply[i + 1];
      if (result instanceof Error) out.push({ error: result });
      else if ((typeof result === 'string' || typeof result === 'number') && (existing === null || typeof existing === 'string'))
        out.push({ existingTimestamp: existing, result });
      else out.push({ error: new Error(`the batch add answered ${JSON.stringify(existing)}, ${JSON.stringify(result)} for one job`) });
    }
    return out;
  }

  /**
   * Our command for BullMQ's `command`, defined on the connection the first time: BullMQ has
   * defined its own scripts on it by then (a queue's client is ready before anything is added).
   */
  private script(command: string): ScriptFn {
    let script = this.defined.get(command);
    if (!script) {
      const loaded: unknown = (this.redis.scriptsSet as Record<string, unknown>)[command];
      if (!isLoadedScript(loaded)) throw new Error(`BullMQ's ${command} script is not defined on this connection`);
      script = batchAddScript(command, loaded.lua);
      this.defined.set(command, script);
    }
    return scriptOn(this.redis, script) as ScriptFn;
  }
}
