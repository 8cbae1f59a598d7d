import type { RedisConnection } from '../redis/redis.ts';

// The no-agent check (no-agent-watch.ts) runs in the cluster worker, which serves no /metrics;
// its result goes into one small Redis hash that the receiver's /metrics exposes with the other
// fleet-wide figures (src/control/http/routes/health.ts). The hash expires when no check renews it, so a
// stopped check shows as an absent series, never as a stale "0".

const noAgentKey = (prefix: string): string => `${prefix}:vm:noagent`;

export interface NoAgentRecord {
  /** Jobs waiting longer than the grace on node queues no agent serves. */
  jobs: number;
  /** Nodes with such jobs. */
  nodes: number;
  checkedAt: number;
}

export async function writeNoAgentRecord(redis: RedisConnection, prefix: string, r: NoAgentRecord, ttlMs: number): Promise<void> {
  const key = noAgentKey(prefix);
  await redis.multi().hset(key, 'jobs', String(r.jobs), 'nodes', String(r.nodes), 'checkedAt', String(r.checkedAt)).pexpire(key, ttlMs).exec();
}

async function readNoAgentRecord(redis: RedisConnection, prefix: string): Promise<NoAgentRecord | undefined> {
  const [jobs, nodes, checkedAt] = await redis.hmget(noAgentKey(prefix), 'jobs', 'nodes', 'checkedAt');
  const n = [jobs, nodes, checkedAt].map((v) => (v === null ? Number.NaN : Number(v)));
  if (!n.every((v) => Number.isInteger(v) && v >= 0)) return undefined;
  return { jobs: n[0]!, nodes: n[1]!, checkedAt: n[2]! };
}

/** Prometheus text exposition; empty while no check has run recently. */
export async function noAgentExposition(redis: RedisConnection, prefix: string): Promise<string> {
  const r = await readNoAgentRecord(redis, prefix);
  if (!r) return '';
  return [
    '# HELP volume_medic_jobs_without_agent Jobs waiting longer than the grace on a node queue that no node agent serves (checked by the cluster worker).',
    '# TYPE volume_medic_jobs_without_agent gauge',
    `volume_medic_jobs_without_agent ${r.jobs}`,
    '# HELP volume_medic_nodes_without_agent Nodes whose queue holds such jobs.',
    '# TYPE volume_medic_nodes_without_agent gauge',
    `volume_medic_nodes_without_agent ${r.nodes}`,
    '',
  ].join('\n');
}
