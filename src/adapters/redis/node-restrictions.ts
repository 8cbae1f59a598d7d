import { parseJson } from '../../core/controls/records.ts';
import { NodeRestriction, nodeRestrictionsKey } from '../../core/redis-budget/restriction.ts';
import type { RedisConnection } from './redis.ts';

// The nodes restricted for going over their Redis memory budget (src/core/redis-budget/
// restriction.ts): recorded by the receiver that counted, read by NodeRedisUsers whenever it
// applies a node's user, lifted by an operator.

// Written while Redis may be full (noeviction refuses an HSET then): `allow-oom` lets this one
// small write through, so the restriction is recorded before the node's user is made read-only
// and any replica that applies the user again (an enrolment) keeps it read-only.
const RECORD = `#!lua flags=allow-oom
-- volume-medic: record a node's restriction (src/adapters/redis/node-restrictions.ts)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

export class NodeRestrictions {
  readonly #redis: RedisConnection;
  readonly #key: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#key = nodeRestrictionsKey(prefix);
  }

  async all(): Promise<Map<string, NodeRestriction>> {
    const out = new Map<string, NodeRestriction>();
    for (const [node, text] of Object.entries(await this.#redis.hgetall(this.#key))) {
      // A record that does not parse still restricts (NodeRedisUsers reads the field only).
      out.set(node, parseJson(NodeRestriction, text) ?? { at: '', usedBytes: 0, budgetBytes: 0 });
    }
    return out;
  }

  async record(node: string, r: NodeRestriction): Promise<void> {
    await this.#redis.eval(RECORD, 1, this.#key, node, JSON.stringify(r));
  }

  /** Lifts the restriction; what it was, or undefined when there was none. */
  async lift(node: string): Promise<NodeRestriction | undefined> {
    const [[, text], [, removed]] = ((await this.#redis.multi().hget(this.#key, node).hdel(this.#key, node).exec()) ?? []) as [
      [Error | null, string | null],
      [Error | null, number],
    ];
    return removed === 1 ? (parseJson(NodeRestriction, text) ?? { at: '', usedBytes: 0, budgetBytes: 0 }) : undefined;
  }
}

/** The restricted nodes as Prometheus series (fleet-wide: exported by one receiver, src/control/fleet/fleet-exporter.ts). */
export async function restrictionsExposition(redis: RedisConnection, prefix: string): Promise<string> {
  const all = await new NodeRestrictions(redis, prefix).all();
  const label = (v: string): string => v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
  return [
    '# HELP volume_medic_node_redis_over_budget 1 for each node whose keys went over its Redis memory budget (NODE_REDIS_BUDGET_MIB): its Redis user may only read until an operator releases it (POST /v1/redis-budget/release).',
    '# TYPE volume_medic_node_redis_over_budget gauge',
    ...[...all.keys()].sort().map((node) => `volume_medic_node_redis_over_budget{node="${label(node)}"} 1`),
    "# HELP volume_medic_node_redis_over_budget_bytes What a restricted node's keys held when the receiver counted them, in bytes.",
    '# TYPE volume_medic_node_redis_over_budget_bytes gauge',
    ...[...all].sort(([a], [b]) => (a < b ? -1 : 1)).map(([node, r]) => `volume_medic_node_redis_over_budget_bytes{node="${label(node)}"} ${r.usedBytes}`),
    '',
  ].join('\n');
}
