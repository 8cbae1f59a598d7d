import type { Config } from '../../core/config/schema.ts';
import { HOST_PORT } from '../../core/config/types.ts';

// Where Redis is, as one value: a single server, a Sentinel-managed primary/replica, or a Cluster,
// with the credentials and TLS that apply to all three. Built once from configuration (which has
// already checked that exactly one topology is set); src/adapters/redis/redis.ts makes connections of it.

export interface HostPort {
  host: string;
  port: number;
}

interface RedisAuth {
  username?: string;
  password?: string;
  /** TLS on every connection (sentinels too); `rediss://` turns it on for a single server. */
  tls?: { caFile?: string };
}

export type RedisTarget =
  | ({ kind: 'single'; url: string } & RedisAuth)
  | ({ kind: 'sentinel'; sentinels: HostPort[]; name: string; sentinelPassword?: string } & RedisAuth)
  | ({ kind: 'cluster'; nodes: HostPort[] } & RedisAuth);

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

function parseHostPort(v: string): HostPort {
  const m = HOST_PORT.exec(v);
  if (!m) throw new Error(`not host:port: ${v}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[3]) };
}

type RedisSettings = Pick<
  Config,
  | 'redisUrl'
  | 'redisSentinels'
  | 'redisSentinelName'
  | 'redisSentinelPassword'
  | 'redisClusterNodes'
  | 'redisUsername'
  | 'redisPassword'
  | 'redisTls'
  | 'redisTlsCaFile'
>;

export function redisTarget(c: RedisSettings): RedisTarget {
  // TLS is on with REDIS_TLS=true or a rediss:// URL; REDIS_TLS_CA_FILE is the CA when it is on
  // (and ignored when it is off, as before: a CA mounted everywhere does not turn TLS on).
  const tlsOn = c.redisTls || (!c.redisSentinels && !c.redisClusterNodes && (c.redisUrl ?? '').startsWith('rediss://'));
  const auth: RedisAuth = {
    ...(c.redisUsername ? { username: c.redisUsername } : {}),
    ...(c.redisPassword ? { password: c.redisPassword } : {}),
    ...(tlsOn ? { tls: c.redisTlsCaFile ? { caFile: c.redisTlsCaFile } : {} } : {}),
  };
  if (c.redisSentinels) {
    if (!c.redisSentinelName) throw new Error('REDIS_SENTINEL_NAME is required with REDIS_SENTINELS');
    return {
      kind: 'sentinel',
      sentinels: c.redisSentinels.map(parseHostPort),
      name: c.redisSentinelName,
      ...(c.redisSentinelPassword ? { sentinelPassword: c.redisSentinelPassword } : {}),
      ...auth,
    };
  }
  if (c.redisClusterNodes) return { kind: 'cluster', nodes: c.redisClusterNodes.map(parseHostPort), ...auth };
  return { kind: 'single', url: c.redisUrl ?? DEFAULT_REDIS_URL, ...auth };
}

/** How many replicas must acknowledge a job before the webhook is answered 202 (REDIS_ACK_REPLICAS). */
export const ackReplicas = (c: Pick<Config, 'redisAckReplicas' | 'redisSentinels'>): number => c.redisAckReplicas ?? (c.redisSentinels ? 1 : 0);

/** For logs: where, never with a password. */
export function describeTarget(t: RedisTarget): string {
  const hp = (h: HostPort) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;
  switch (t.kind) {
    case 'single': {
      try {
        const u = new URL(t.url);
        return `single ${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
      } catch {
        return 'single (unparsable URL)';
      }
    }
    case 'sentinel':
      return `sentinel ${t.name} via ${t.sentinels.map(hp).join(',')}`;
    case 'cluster':
      return `cluster via ${t.nodes.map(hp).join(',')}`;
    default:
      return t satisfies never;
  }
}
