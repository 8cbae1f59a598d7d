import { luaScript, scriptOn, type LuaScript } from './lua-script.ts';
import type { RedisConnection } from './redis.ts';
import { isNodeName } from '../../core/catalogue/names.ts';
import { nodeQueueName } from '../../core/catalogue/queues.ts';
import { MAX_GENERATION, type GenerationTable } from '../../core/trust/key-generations.ts';

// Each node's credential generation (src/core/trust/key-generations.ts), kept in Redis where every
// receiver replica and the cluster worker read it, and only the receiver changes it:
//   <prefix>:{vm-cred}:generations  node -> generation, only for nodes above 0 (small: revoked
//                                   or deleted nodes), read whole by every reader when it changed
//   <prefix>:{vm-cred}:nodes        node -> the uid of the Node its generation was handed out to,
//                                   or `gone:<uid>` once that Node was deleted
//   <prefix>:{vm-cred}:issued       node -> the generation last handed out at enrolment
//   <prefix>:{vm-cred}:version      raised with every generation: readers poll this one string
// No node's Redis user reaches them (a node's keys are `<prefix>:vm-node-{<node>}:*`, and the
// shared node-agent user's `<prefix>:vm-node-*` and `<prefix>:vm:*`); the receiver's and the
// cluster worker's users reach every key of the prefix. The hash tag keeps the four in one slot
// of a Cluster, so each script below touches one slot. The scripts are registered
// (src/adapters/lua/registry.ts): the cluster worker imports this module to read, and every script
// on an agent's path runs by EVALSHA only.

export const nodeGenerationKeys = (prefix: string) => ({
  generations: `${prefix}:{vm-cred}:generations`,
  nodes: `${prefix}:{vm-cred}:nodes`,
  issued: `${prefix}:{vm-cred}:issued`,
  version: `${prefix}:{vm-cred}:version`,
});

/** The generation for an enrolment of the Node with uid ARGV[2]: raised when another Node of that name held it. */
export const GENERATION_AT_ENROLMENT = luaScript(
  'volumeMedicGenerationAtEnrolment',
  `-- volume-medic: a node's credential generation at enrolment (src/adapters/redis/node-generations.ts)
local g = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local bound = redis.call('HGET', KEYS[2], ARGV[1])
if bound ~= ARGV[2] then
  if bound and string.sub(bound, 1, 5) ~= 'gone:' then
    g = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
    redis.call('INCR', KEYS[4])
  end
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
if redis.call('HGET', KEYS[3], ARGV[1]) ~= tostring(g) then redis.call('HSET', KEYS[3], ARGV[1], g) end
return g
`,
  4,
);

/**
 * The Node with uid ARGV[2] ('' unknown) was deleted: raised once, whichever replica sees it first;
 * not when a newer Node of that name already holds the generation (a late event). Returns {g, raised}.
 */
export const GENERATION_NODE_DELETED = luaScript(
  'volumeMedicGenerationNodeDeleted',
  `-- volume-medic: a deleted Node's credentials die (src/adapters/redis/node-generations.ts)
local bound = redis.call('HGET', KEYS[2], ARGV[1])
if ARGV[2] ~= '' and bound then
  if bound == 'gone:' .. ARGV[2] or (string.sub(bound, 1, 5) ~= 'gone:' and bound ~= ARGV[2]) then
    return {tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0'), 0}
  end
end
local g = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[2], ARGV[1], 'gone:' .. ARGV[2])
return {g, 1}
`,
  4,
);

/**
 * An operator's revoke: raised unless nothing was handed out at the current generation since it
 * was raised (a repeated revoke changes nothing). Returns {g, raised}.
 */
export const GENERATION_REVOKE = luaScript(
  'volumeMedicGenerationRevoke',
  `-- volume-medic: revoke a node's credentials (src/adapters/redis/node-generations.ts)
local now = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local issued = redis.call('HGET', KEYS[3], ARGV[1])
if issued and tonumber(issued) < now then return {now, 0} end
local g = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('INCR', KEYS[4])
return {g, 1}
`,
  4,
);

const generationOf = (v: unknown): number => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_GENERATION) throw new Error(`node generation out of range: ${String(v).slice(0, 40)}`);
  return n;
};

export interface GenerationChange {
  generation: number;
  /** False when nothing changed (another replica did it, or nothing was handed out since). */
  raised: boolean;
}

export class NodeGenerations {
  readonly #redis: RedisConnection;
  readonly #keys: ReturnType<typeof nodeGenerationKeys>;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#keys = nodeGenerationKeys(prefix);
  }

  #run(script: LuaScript, ...args: string[]): Promise<unknown> {
    const k = this.#keys;
    return scriptOn(this.#redis, script)(k.generations, k.nodes, k.issued, k.version, ...args);
  }

  /** The generation to hand out to the Node `node` with `uid`, raised first when another Node of that name held it. */
  async atEnrolment(node: string, uid: string): Promise<number> {
    return generationOf(await this.#run(GENERATION_AT_ENROLMENT, checked(node), uid));
  }

  /** The Node `node` (its `uid` when the watch says) was deleted. */
  async nodeDeleted(node: string, uid = ''): Promise<GenerationChange> {
    return change(await this.#run(GENERATION_NODE_DELETED, checked(node), uid));
  }

  async revoke(node: string): Promise<GenerationChange> {
    return change(await this.#run(GENERATION_REVOKE, checked(node)));
  }

  async current(node: string): Promise<number> {
    return generationOf((await this.#redis.hget(this.#keys.generations, checked(node))) ?? 0);
  }

  /** The version and, when it differs from `known`, every node above generation 0. */
  async readIfChanged(known: string | null | undefined): Promise<{ version: string | null; generations?: Map<string, number> }> {
    const version = await this.#redis.get(this.#keys.version);
    if (known !== undefined && version === known) return { version };
    const all = await this.#redis.hgetall(this.#keys.generations);
    const generations = new Map<string, number>();
    for (const [node, g] of Object.entries(all)) {
      const n = Number(g);
      if (isNodeName(node) && Number.isSafeInteger(n) && n > 0 && n <= MAX_GENERATION) generations.set(node, n);
    }
    return { version, generations };
  }
}

function checked(node: string): string {
  if (!isNodeName(node)) throw new Error(`not a node name: ${JSON.stringify(node.slice(0, 80))}`);
  return node;
}

function change(reply: unknown): GenerationChange {
  if (!Array.isArray(reply) || reply.length !== 2) throw new Error('unexpected reply from the generation script');
  return { generation: generationOf(reply[0]), raised: Number(reply[1]) === 1 };
}

export interface GenerationFollower {
  /** Settles after the first read (or its failure: then the table starts empty and the next poll tries again). */
  readonly first: Promise<void>;
  close(): void;
}

/** How often a reader looks for raised generations: the longest another replica seals with an older one. */
export const GENERATIONS_POLL_MS = 2_000;

/**
 * Keeps `table` at the generations in Redis: one GET of the version every `intervalMs`, and the
 * small hash only when the version moved. `onRaised` hears each node whose generation rose here
 * (a deletion or a revoke seen by another replica).
 */
export function followGenerations(o: {
  store: NodeGenerations;
  table: GenerationTable;
  log: { warn(o: object, msg: string): void };
  intervalMs?: number;
  onRaised?: (node: string, generation: number) => void;
}): GenerationFollower {
  let version: string | null | undefined;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const poll = async (): Promise<void> => {
    try {
      const r = await o.store.readIfChanged(version);
      if (r.generations) for (const [node, g] of r.generations) if (o.table.raise(nodeQueueName(node), g)) o.onRaised?.(node, g);
      version = r.version;
      failing = false;
    } catch (err) {
      // Once per outage: every poll of a Redis that is down fails the same way.
      if (!failing) o.log.warn({ err: (err as Error).message }, "could not read the nodes' credential generations; sealing with those last read");
      failing = true;
    }
  };
  const schedule = (): void => {
    if (closed) return;
    timer = setTimeout(() => void poll().finally(schedule), o.intervalMs ?? GENERATIONS_POLL_MS);
    timer.unref();
  };
  const first = poll().finally(schedule);
  return {
    first,
    close: () => {
      closed = true;
      clearTimeout(timer);
    },
  };
}
