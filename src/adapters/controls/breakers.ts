import type { ChainableCommander } from 'ioredis';
import type { Config } from '../../core/config/schema.ts';
import { luaScript, scriptOn } from '../redis/lua-script.ts';
import type { RedisConnection } from '../redis/redis.ts';
import { controlKeys, type ControlKeys } from '../../core/controls/redis-keys.ts';
import { TripRecord, parseJson } from '../../core/controls/records.ts';

// Blast-radius breakers. Each destructive step reserves a slot in a sliding one-hour window for
// its node and for the whole cluster, atomically (one Lua script), so two agents cannot both
// take the last slot. A breaker trips when its window reaches the cap: the step that reached
// the cap runs, the next destructive step anywhere in its scope is blocked. The storm breaker
// trips when more than M distinct nodes were given new jobs within its window (counted where the
// receiver stores them, or at the start of one it did not store). Tripped breakers stay
// tripped until reset through the API (which also empties that breaker's window), and say why.

export interface BreakerCaps {
  /** 0: no cap. */
  nodePerHour: number;
  /** 0: no cap. */
  clusterPerHour: number;
  /** More than this many nodes in the window trips the storm breaker; 0: off. */
  stormNodes: number;
  stormWindowMs: number;
}

const HOUR_MS = 3_600_000;

/** The caps as configured (BREAKER_*): the receiver's apply to the slots it takes for agents. */
export function breakerCapsFromConfig(
  config: Pick<Config, 'breakerNodeDestructivePerHour' | 'breakerClusterDestructivePerHour' | 'breakerStormNodes' | 'breakerStormWindowSeconds'>,
): BreakerCaps {
  return {
    nodePerHour: config.breakerNodeDestructivePerHour,
    clusterPerHour: config.breakerClusterDestructivePerHour,
    stormNodes: config.breakerStormNodes,
    stormWindowMs: config.breakerStormWindowSeconds * 1000,
  };
}

/** What a worker's gate asks of the breakers: this class on Redis, or the receiver on an agent's behalf (workers/engine/receiver-breakers.ts). */
export interface BreakerPort {
  reserveDestructive(caps: BreakerCaps, what: SlotAsk): Promise<Reservation>;
  recordNodeActivity(caps: BreakerCaps, node: string, source?: string): Promise<TripRecord | undefined>;
}

/** A node counted towards the storm breaker, and what sent its job's signal. */
export interface NodeStart {
  node: string;
  source?: string | undefined;
}

/** A destructive step asking for a slot. */
export interface SlotAsk {
  node?: string;
  jobId: string;
  stepId: string;
  /**
   * When the step asked, by the asker's clock (epoch ms): with the job and step, the slot's
   * identity, so the same ask sent again takes the same slot. Never the slot's time in the window,
   * which is this Breakers' clock (the receiver's, for an agent's ask). Default: that clock's now.
   */
  askedAt?: number;
}

export type Reservation = { ok: true; nodeCount: number; clusterCount: number; tripped: TripRecord[] } | { ok: false; blockedBy: TripRecord };

export const BREAKER_RESERVE = luaScript(
  'vmBreakerReserve',
  `
local tripped = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local nodeField = ARGV[3]
local nodeCap = tonumber(ARGV[4])
local clusterCap = tonumber(ARGV[5])
local member = ARGV[6]
local at = ARGV[7]
for _, f in ipairs({'storm', 'cluster', nodeField}) do
  if f ~= '' then
    local t = redis.call('HGET', tripped, f)
    if t then return {0, t} end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
redis.call('ZADD', KEYS[3], 'NX', now, member)
redis.call('PEXPIRE', KEYS[3], window)
local c = redis.call('ZCARD', KEYS[3])
local n = 0
if nodeField ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  redis.call('ZADD', KEYS[2], 'NX', now, member)
  redis.call('PEXPIRE', KEYS[2], window)
  n = redis.call('ZCARD', KEYS[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - window)
  redis.call('ZADD', KEYS[4], now, string.sub(nodeField, 6))
  redis.call('PEXPIRE', KEYS[4], window)
end
local trips = {}
if nodeField ~= '' and nodeCap > 0 and n >= nodeCap then
  local rec = cjson.encode({breaker = nodeField, why = string.format('%s ran %d destructive steps in the last hour (cap %d); the last was %s', nodeField, n, nodeCap, member), at = at, count = n, cap = nodeCap})
  redis.call('HSET', tripped, nodeField, rec)
  table.insert(trips, rec)
end
if clusterCap > 0 and c >= clusterCap then
  local rec = cjson.encode({breaker = 'cluster', why = string.format('the cluster ran %d destructive steps in the last hour (cap %d); the last was %s', c, clusterCap, member), at = at, count = c, cap = clusterCap})
  redis.call('HSET', tripped, 'cluster', rec)
  table.insert(trips, rec)
end
return {1, n, c, unpack(trips)}`,
  4,
);

// KEYS[3]: node -> the source (alertmanager, k8s-event, npd, k8s-watch, api, agent) of the job it
// last started, so a trip names who sent the flood (one sender's flood is that sender's, and
// the alert says so). At a trip the window holds cap + 1 nodes: counting them is cheap.
// ARGV: now, window, limit, the trip's time, then a node and its source per node counted: the
// receiver counts every node of a batch of jobs it stored in one call (store-pipeline.ts).
export const BREAKER_STORM = luaScript(
  'vmBreakerStorm',
  `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
for i = 5, #ARGV, 2 do
  redis.call('ZADD', KEYS[2], now, ARGV[i])
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[2], window)
redis.call('PEXPIRE', KEYS[3], window)
local n = redis.call('ZCARD', KEYS[2])
if limit > 0 and n > limit and redis.call('HEXISTS', KEYS[1], 'storm') == 0 then
  local all = redis.call('ZRANGE', KEYS[2], 0, 999)
  local bySource = {}
  local order = {}
  for _, node in ipairs(all) do
    local src = redis.call('HGET', KEYS[3], node) or 'unknown'
    if not bySource[src] then bySource[src] = 0; table.insert(order, src) end
    bySource[src] = bySource[src] + 1
  end
  table.sort(order, function(a, b) if bySource[a] ~= bySource[b] then return bySource[a] > bySource[b] end return a < b end)
  local parts = {}
  for _, src in ipairs(order) do table.insert(parts, string.format('%s %d', src, bySource[src])) end
  local nodes = redis.call('ZRANGE', KEYS[2], 0, 19)
  local rec = cjson.encode({breaker = 'storm', why = string.format('%d nodes started recovery jobs within %d s (more than %d), from %s: %s', n, window / 1000, limit, table.concat(parts, ', '), table.concat(nodes, ', ')), at = ARGV[4], count = n, cap = limit, sources = bySource})
  redis.call('HSET', KEYS[1], 'storm', rec)
  return rec
end
return false`,
  3,
);

/** The storm script's reply: the trip this start caused, if it did. */
export function stormTrip(reply: unknown): TripRecord | undefined {
  return typeof reply === 'string' ? parseJson(TripRecord, reply) : undefined;
}

export interface BreakerState {
  name: string;
  cap: number;
  windowSeconds: number;
  count: number;
  tripped?: TripRecord;
}

/** The scripts as commands of the connection (lua-script.ts: by EVALSHA), named as BREAKER_RESERVE and BREAKER_STORM. */
interface BreakerCommands {
  vmBreakerReserve(...keysAndArgs: string[]): Promise<unknown>;
  vmBreakerStorm(...keysAndArgs: string[]): Promise<unknown>;
}

function withBreakerCommands(redis: RedisConnection): RedisConnection & BreakerCommands {
  // ioredis keeps defined commands on the connection: define them once, whoever comes first.
  // (queueNodeActivity sends the storm script in a pipeline, which takes the connection's commands.)
  scriptOn(redis, BREAKER_RESERVE);
  scriptOn(redis, BREAKER_STORM);
  return redis as RedisConnection & BreakerCommands;
}

export class Breakers implements BreakerPort {
  readonly #redis: RedisConnection & BreakerCommands;
  readonly #keys: ControlKeys;
  readonly #now: () => Date;

  constructor(redis: RedisConnection, prefix: string, now: () => Date = () => new Date()) {
    this.#redis = withBreakerCommands(redis);
    this.#keys = controlKeys(prefix);
    this.#now = now;
  }

  /**
   * Before a destructive step: take a slot, or say which tripped breaker blocks it. A slot is the
   * ask's member (job, step, askedAt) at this clock's now; an ask already in the window keeps its
   * first time (ZADD NX), so a repeat neither adds a slot nor stretches its hour.
   */
  async reserveDestructive(caps: BreakerCaps, what: SlotAsk): Promise<Reservation> {
    const now = this.#now();
    const nodeField = what.node ? `node/${what.node}` : '';
    // Four keys, one slot (the breakers' hash tag): a node-less step passes a placeholder key of the same slot, never written.
    const r = (await this.#redis.vmBreakerReserve(
      this.#keys.tripped,
      what.node ? this.#keys.destructiveNode(what.node) : `${this.#keys.tripped}:none`,
      this.#keys.destructiveCluster,
      this.#keys.destructiveNodes,
      String(now.getTime()),
      String(HOUR_MS),
      nodeField,
      String(caps.nodePerHour),
      String(caps.clusterPerHour),
      `${what.jobId}/${what.stepId}@${new Date(what.askedAt ?? now.getTime()).toISOString()}`,
      now.toISOString(),
    )) as [number, ...unknown[]];
    if (r[0] === 0) {
      return {
        ok: false,
        blockedBy: parseJson(TripRecord, String(r[1])) ?? {
          breaker: 'unknown',
          why: String(r[1]),
          at: now.toISOString(),
          count: 0,
          cap: 0,
        },
      };
    }
    const tripped = r
      .slice(3)
      .map((t) => parseJson(TripRecord, String(t)))
      .filter((t): t is TripRecord => t !== undefined);
    return { ok: true, nodeCount: Number(r[1]), clusterCount: Number(r[2]), tripped };
  }

  /**
   * A node started a job: count it towards the storm breaker, with the job's source (what sent
   * the signal). Returns the trip when this start tripped it.
   */
  async recordNodeActivity(caps: BreakerCaps, node: string, source = 'unknown'): Promise<TripRecord | undefined> {
    return this.recordNodesActivity(caps, [{ node, source }]);
  }

  /** recordNodeActivity for many nodes at once (one call): the trip, if these starts caused it. */
  async recordNodesActivity(caps: BreakerCaps, starts: readonly NodeStart[]): Promise<TripRecord | undefined> {
    if (starts.length === 0) return undefined;
    return stormTrip(await this.#redis.vmBreakerStorm(...this.#stormArgs(caps, starts)));
  }

  /**
   * recordNodeActivity as one more command of a pipeline the caller sends (a job's start sends
   * it with its reads of the controls: one round trip); stormTrip reads its reply.
   */
  queueNodeActivity(p: ChainableCommander, caps: BreakerCaps, node: string, source = 'unknown'): void {
    (p as ChainableCommander & BreakerCommands).vmBreakerStorm(...this.#stormArgs(caps, [{ node, source }]));
  }

  #stormArgs(caps: BreakerCaps, starts: readonly NodeStart[]): string[] {
    const now = this.#now();
    const args = [
      this.#keys.tripped,
      this.#keys.storm,
      this.#keys.stormSources,
      String(now.getTime()),
      String(caps.stormWindowMs),
      String(caps.stormNodes),
      now.toISOString(),
    ];
    for (const s of starts) args.push(s.node, s.source ?? 'unknown');
    return args;
  }

  async tripped(): Promise<TripRecord[]> {
    const all = await this.#redis.hgetall(this.#keys.tripped);
    return Object.values(all)
      .map((t) => parseJson(TripRecord, t))
      .filter((t): t is TripRecord => t !== undefined)
      .sort((a, b) => a.breaker.localeCompare(b.breaker));
  }

  /** Every breaker with a count or a trip, plus cluster and storm always. */
  async states(caps: BreakerCaps): Promise<BreakerState[]> {
    const now = this.#now().getTime();
    const trips = new Map((await this.tripped()).map((t) => [t.breaker, t]));
    const count = async (key: string, windowMs: number): Promise<number> => this.#redis.zcount(key, now - windowMs, '+inf');
    const out: BreakerState[] = [
      {
        name: 'cluster',
        cap: caps.clusterPerHour,
        windowSeconds: HOUR_MS / 1000,
        count: await count(this.#keys.destructiveCluster, HOUR_MS),
      },
      {
        name: 'storm',
        cap: caps.stormNodes,
        windowSeconds: caps.stormWindowMs / 1000,
        count: await count(this.#keys.storm, caps.stormWindowMs),
      },
    ];
    const nodes = new Set<string>([...trips.keys()].filter((k) => k.startsWith('node/')).map((k) => k.slice(5)));
    // Nodes with a window: the index the reservation keeps (no SCAN over the keyspace, any topology).
    for (const node of await this.#redis.zrangebyscore(this.#keys.destructiveNodes, now - HOUR_MS, '+inf')) nodes.add(node);
    for (const node of [...nodes].sort()) {
      out.push({
        name: `node/${node}`,
        cap: caps.nodePerHour,
        windowSeconds: HOUR_MS / 1000,
        count: await count(this.#keys.destructiveNode(node), HOUR_MS),
      });
    }
    return out.map((b) => (trips.has(b.name) ? { ...b, tripped: trips.get(b.name) as TripRecord } : b));
  }

  /** Closes a breaker and empties its window. Returns the trip it cleared, if it was tripped. */
  async reset(name: string): Promise<TripRecord | undefined> {
    const [trip] = await Promise.all([this.#redis.hget(this.#keys.tripped, name)]);
    const windowKey = name === 'cluster' ? this.#keys.destructiveCluster : name === 'storm' ? this.#keys.storm : this.#keys.destructiveNode(name.slice(5));
    // One slot: every breaker key carries the breakers' hash tag.
    const tx = this.#redis.multi().hdel(this.#keys.tripped, name).del(windowKey);
    if (name === 'storm') tx.del(this.#keys.stormSources);
    if (name.startsWith('node/')) tx.zrem(this.#keys.destructiveNodes, name.slice(5));
    await tx.exec();
    return parseJson(TripRecord, trip);
  }
}
