import { accessSync, constants } from 'node:fs';
import { z } from '../../zod.ts';
import { ConfigError } from '../config-error.ts';
import { list } from '../env-text.ts';
import { EVERY_PROCESS, section, setting } from '../setting.ts';
import { Flag, HostPort, Millis, NonEmpty } from '../types.ts';

function isRedisUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '' && !/\s/.test(v);
  } catch {
    return false;
  }
}

const TOPOLOGY = ['redisUrl', 'redisSentinels', 'redisClusterNodes'] as const;
const TOPOLOGY_ENV = { redisUrl: 'REDIS_URL', redisSentinels: 'REDIS_SENTINELS', redisClusterNodes: 'REDIS_CLUSTER_NODES' } as const;

export const redis = section({
  title: 'Redis',
  doc: "Where the queues live. Exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (none: REDIS_URL's default, for development); src/adapters/redis/redis-target.ts makes a connection of them.",
  settings: {
    redisUrl: setting({
      env: 'REDIS_URL',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.string().check(z.refine(isRedisUrl, 'a redis:// or rediss:// URL'))),
      doc: 'A single Redis, `redis://` or `rediss://` (TLS). With a password in it, better REDIS_URL_FILE: a file holding the URL (a mounted Secret; what the chart sets), so the password is in no process environment. Not both.',
      fromFile: 'REDIS_URL_FILE',
      defaultText: '`redis://127.0.0.1:6379` when no topology is set',
    }),
    redisSentinels: setting({
      env: 'REDIS_SENTINELS',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.array(HostPort).check(z.minLength(1))),
      read: list,
      doc: 'Sentinel-managed primary/replica: the sentinels, `host:port,host:port`; needs REDIS_SENTINEL_NAME.',
    }),
    redisSentinelName: setting({
      env: 'REDIS_SENTINEL_NAME',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.string().check(z.regex(/^[A-Za-z0-9._-]{1,128}$/, 'letters, digits, . _ - only'))),
      doc: "The primary's name the sentinels monitor (`sentinel monitor <name> ...`).",
    }),
    redisSentinelPassword: setting({
      env: 'REDIS_SENTINEL_PASSWORD',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: "The sentinels' own password (`requirepass` of the sentinels), if any. Never logged. Or REDIS_SENTINEL_PASSWORD_FILE: a file holding it (the chart's way). Not both.",
      fromFile: 'REDIS_SENTINEL_PASSWORD_FILE',
      secret: true,
    }),
    redisClusterNodes: setting({
      env: 'REDIS_CLUSTER_NODES',
      readers: EVERY_PROCESS,
      type: () => z.optional(z.array(HostPort).check(z.minLength(1))),
      read: list,
      doc: 'Redis Cluster: some of its nodes, `host:port,host:port` (the rest is discovered).',
    }),
    redisUsername: setting({
      env: 'REDIS_USERNAME',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: 'ACL user for the Redis servers (all three topologies); default none (`default`).',
    }),
    redisPassword: setting({
      env: 'REDIS_PASSWORD',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: "Password of the Redis servers (all three topologies); overrides one in REDIS_URL. Never logged. Or REDIS_PASSWORD_FILE: a file holding it (the chart's way). Not both.",
      fromFile: 'REDIS_PASSWORD_FILE',
      secret: true,
    }),
    redisTls: setting({
      env: 'REDIS_TLS',
      readers: EVERY_PROCESS,
      type: () => z._default(Flag, false),
      doc: 'Connect with TLS (all three topologies; sentinels too). `rediss://` implies it.',
    }),
    redisTlsCaFile: setting({
      env: 'REDIS_TLS_CA_FILE',
      readers: EVERY_PROCESS,
      type: () => z.optional(NonEmpty),
      doc: "PEM file of the CA that signed the Redis servers' certificates (default: the system's CAs).",
    }),
    redisAckReplicas: setting({
      env: 'REDIS_ACK_REPLICAS',
      readers: ['receiver'],
      type: () => z.optional(z.coerce.number().check(z.int(), z.gte(0), z.lte(16))),
      doc: 'A webhook is answered 202 only once every replica the primary lists online, and at least this many, acknowledged its job (`WAIT`, on a connection of its own): a failover after a crash may promote any of them. Set it to the number of replicas to also hold 202s in the second a forced failover leaves the old primary taking writes (then a replica away means 503s). When they do not within REDIS_ACK_TIMEOUT_MS the answer is 503 and the sender retries. Not supported with REDIS_CLUSTER_NODES (a batch spans masters).',
      defaultText: '1 with REDIS_SENTINELS, else 0 (no wait)',
    }),
    redisAckTimeoutMs: setting({
      env: 'REDIS_ACK_TIMEOUT_MS',
      readers: ['receiver'],
      type: () => z._default(Millis, 1_000),
      doc: 'How long a replica acknowledgement is waited for.',
    }),
  },
  check: (c, issue) => {
    // Exactly one topology. Issues name the setting (load.ts turns that into the variable's name).
    const set = TOPOLOGY.filter((k) => c[k] !== undefined);
    for (const k of set.slice(1))
      issue(
        k,
        `set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (also set: ${set
          .filter((o) => o !== k)
          .map((o) => TOPOLOGY_ENV[o])
          .join(', ')})`,
      );
    if (c.redisSentinels && !c.redisSentinelName) issue('redisSentinelName', 'required with REDIS_SENTINELS: the name of the primary the sentinels monitor');
    if (!c.redisSentinels && c.redisSentinelName) issue('redisSentinelName', 'only meaningful with REDIS_SENTINELS');
    if (!c.redisSentinels && c.redisSentinelPassword) issue('redisSentinelPassword', 'only meaningful with REDIS_SENTINELS');
    if (c.redisClusterNodes && (c.redisAckReplicas ?? 0) > 0)
      issue('redisAckReplicas', 'not supported with REDIS_CLUSTER_NODES (a batch of jobs spans masters); set 0');
  },
  verify: (c) => {
    if (!c.redisTlsCaFile) return;
    try {
      accessSync(c.redisTlsCaFile, constants.R_OK);
    } catch (err) {
      throw new ConfigError(`REDIS_TLS_CA_FILE: cannot read ${c.redisTlsCaFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  },
});
