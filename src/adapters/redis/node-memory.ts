import { Cluster, type Redis } from 'ioredis';
import { keysOfNodePattern, nodeKeyPattern, nodeOfKey, RemovalWalk, removalCut, SizeClasses } from '../../core/redis-budget/accounting.ts';
import type { MemorySample } from '../../core/redis-budget/decision.ts';
import type { RedisConnection } from './redis.ts';

// What the nodes' keys hold in Redis, and giving one node's memory back: the Redis side of the
// per-node memory budget (src/core/redis-budget/, src/control/fleet/node-redis-budget.ts).
//
// Sizes are MEMORY USAGE with SAMPLES 0, every element counted: the default (5 samples) guesses a
// hash or a stream from a few of its elements, and one huge field among small ones (a job's result
// in its hash) is then missed, or inflated: a node could hide a flood in it. Counting every
// element costs time in proportion to a key's elements: nothing for the small keys of a
// well-behaved node, and what it takes for a flooded one.
//
// Cost of a count: one SCAN over the keyspace of each primary (COUNT 1000 a call) and one MEMORY
// USAGE per node key, pipelined SCAN_COUNT at a time; the receiver holds one number per node, never
// the key names (docs/decisions/0006 has the figures for a 10,000-node fleet).

const SCAN_COUNT = 1000;

/** The servers that hold keys: the one server or Sentinel primary, every master of a Cluster. */
const primaries = (redis: RedisConnection): Redis[] => (redis instanceof Cluster ? redis.nodes('master') : [redis]);

/** `used_memory` and `maxmemory` of an INFO memory answer. */
export function parseMemoryInfo(info: string): MemorySample {
  const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)\\r?$`, 'm').exec(info)?.[1] ?? 0);
  return { used: field('used_memory'), max: field('maxmemory') };
}

export const memorySamples = (redis: RedisConnection): Promise<MemorySample[]> =>
  Promise.all(primaries(redis).map(async (s) => parseMemoryInfo(await s.info('memory'))));

/** Every key of `pattern` on `server`, a SCAN batch at a time, each with its size. */
async function* sizedKeys(server: Redis, pattern: string): AsyncGenerator<{ key: string; bytes: number }[]> {
  let cursor = '0';
  do {
    const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    cursor = next;
    if (keys.length === 0) continue;
    const p = server.pipeline();
    for (const k of keys) p.call('MEMORY', 'USAGE', k, 'SAMPLES', '0');
    const sizes = (await p.exec()) ?? [];
    // A key gone since the SCAN answers null (0 bytes); an error counts 0 too.
    yield keys.map((key, i) => ({ key, bytes: Number(sizes[i]?.[1] ?? 0) || 0 }));
  } while (cursor !== '0');
}

export interface NodeUsage {
  /** node -> bytes of its keys. */
  usage: Map<string, number>;
  /** Node keys counted. */
  keys: number;
}

/** One count of every node's keys on every primary. */
export async function nodeUsage(redis: RedisConnection, prefix: string): Promise<NodeUsage> {
  const usage = new Map<string, number>();
  let keys = 0;
  for (const server of primaries(redis)) {
    for await (const batch of sizedKeys(server, nodeKeyPattern(prefix))) {
      for (const { key, bytes } of batch) {
        const node = nodeOfKey(prefix, key);
        if (node === undefined) continue;
        usage.set(node, (usage.get(node) ?? 0) + bytes);
        keys++;
      }
    }
  }
  return { usage, keys };
}

export interface TrimReport {
  /** The node's bytes before. */
  before: number;
  keys: number;
  bytes: number;
  /** The largest keys removed (at most 10), for the log. */
  largest: { key: string; bytes: number }[];
}

/**
 * Removes `node`'s keys until what is left holds at most `target` bytes: only keys of its
 * own pattern (`<prefix>:vm-node-{<node>}:*`), which no other node and none of the receiver's
 * fleet keys match. Two SCANs: the first sorts the node's bytes into size classes, the second
 * removes (UNLINK: freed off Redis' main thread) the keys of the heaviest classes first
 * (src/core/redis-budget/accounting.ts removalCut).
 */
export async function trimNode(redis: RedisConnection, prefix: string, node: string, target: number): Promise<TrimReport> {
  const pattern = keysOfNodePattern(prefix, node);
  const classes = new SizeClasses();
  const own = (k: { key: string }): boolean => nodeOfKey(prefix, k.key) === node;
  for (const server of primaries(redis)) for await (const batch of sizedKeys(server, pattern)) for (const k of batch) if (own(k)) classes.add(k.bytes);
  const report: TrimReport = { before: classes.total, keys: 0, bytes: 0, largest: [] };
  const cut = removalCut(classes, classes.total - target);
  if (!cut) return report;
  const walk = new RemovalWalk(cut);
  for (const server of primaries(redis)) {
    for await (const batch of sizedKeys(server, pattern)) {
      const gone = batch.filter((k) => own(k) && walk.takes(k.bytes));
      if (gone.length === 0) continue;
      await server.unlink(...gone.map((k) => k.key));
      report.keys += gone.length;
      for (const k of gone) report.bytes += k.bytes;
      report.largest = [...report.largest, ...gone].sort((a, b) => b.bytes - a.bytes).slice(0, 10);
    }
  }
  return report;
}
