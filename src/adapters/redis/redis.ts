import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConfigError } from '../../core/config/load.ts';
import { fullJitter, PRODUCER_BACKOFF, WORKER_BACKOFF } from './reconnect-backoff.ts';
import { evalshaFirst } from './lua-script.ts';
import type { RedisTarget } from './redis-target.ts';
import { slotConnector, slotMovedAway } from './slot-connector.ts';

// The one place connections are made, for every topology (single, Sentinel, Cluster). Every
// module takes a RedisConnection, never assumes a single server.
//
// Two kinds of connection. The receiver's must fail fast when Redis is away, so a webhook gets a
// 503 (and the sender retries) instead of hanging in ioredis' offline queue. A worker's must
// wait forever for blocking commands, as BullMQ requires (maxRetriesPerRequest: null).
//
// Credentials: REDIS_URL may carry the user and password (redis://user:password@host:6379; each
// process has its own ACL user, deploy/README.md "Redis"); REDIS_USERNAME / REDIS_PASSWORD set
// them for every topology (and override the URL's). TLS: rediss:// or REDIS_TLS=true, with a
// private CA from REDIS_TLS_CA_FILE (PEM; unset: the system's CAs). The certificate's name is
// always checked. BullMQ's duplicates of a connection inherit all of it.
//
// Scripts (BullMQ's and ours) go by EVALSHA on every connection (lua-script.ts evalshaFirst): the
// agents' Redis users may not EVAL, and run what the receiver loaded.

/** A connection to wherever Redis is: a server (direct or found through Sentinel) or a Cluster. */
export type RedisConnection = Redis | Cluster;

export type ConnectionRole = 'producer' | 'worker';

/** How long a worker's Cluster client waits for the slot map (CLUSTER SLOTS) before it asks again. */
const WORKER_SLOTS_REFRESH_TIMEOUT_MS = 10_000;

/** How long a sentinel may take to say where the primary is before the next one is asked. */
const SENTINEL_COMMAND_TIMEOUT_MS = 2_000;

export interface ConnectOptions {
  /** CLIENT SETNAME on every (re)connect, so CLIENT LIST says whose connection it is. */
  connectionName?: string;
  /** Sentinel only: how long a sentinel may take to answer (default SENTINEL_COMMAND_TIMEOUT_MS). */
  sentinelCommandTimeoutMs?: number;
  /**
   * Cluster only: every key this client touches hashes to the slot of `key` (a node agent's queue's
   * hash tag). It connects to that slot's master alone (slot-connector.ts), and a key of another
   * slot is refused with MOVED.
   */
  oneSlot?: { key: string };
}

/**
 * A plain string is a single server's URL (tests, tools). Long-lived connections of a process
 * are opened through RedisConnections (redis-connections.ts), which brings back one that ended.
 */
export function connect(target: RedisTarget | string, role: ConnectionRole, o: ConnectOptions = {}): RedisConnection {
  return evalshaFirst(newConnection(target, role, o));
}

function newConnection(target: RedisTarget | string, role: ConnectionRole, o: ConnectOptions): RedisConnection {
  const t: RedisTarget = typeof target === 'string' ? { kind: 'single', url: target } : target;
  const producer = role === 'producer';
  const retryStrategy = fullJitter(producer ? PRODUCER_BACKOFF : WORKER_BACKOFF);
  const requests: RedisOptions = {
    ...(producer ? { maxRetriesPerRequest: 1, connectTimeout: 2_000 } : { maxRetriesPerRequest: null }),
    ...(o.connectionName ? { connectionName: o.connectionName } : {}),
  };
  const tls = tlsOptions(t);
  const auth: RedisOptions = {
    ...(t.username ? { username: t.username } : {}),
    ...(t.password ? { password: t.password } : {}),
    ...(tls ? { tls } : {}),
  };
  switch (t.kind) {
    case 'single':
      return new Redis(t.url, { ...requests, ...auth, enableOfflineQueue: !producer, retryStrategy });
    case 'sentinel':
      return new Redis({
        ...requests,
        ...auth,
        enableOfflineQueue: !producer,
        sentinels: t.sentinels,
        name: t.name,
        role: 'master',
        ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
        ...(tls ? { sentinelTLS: tls, enableTLSForSentinelMode: true } : {}),
        retryStrategy,
        // All sentinels unreachable: the same jittered wait, never giving up.
        sentinelRetryStrategy: retryStrategy,
        // ioredis waits for a sentinel's answer without a deadline: one hung sentinel would hold
        // every reconnect (and widen the window in which a failover ends the connection).
        sentinelCommandTimeout: o.sentinelCommandTimeoutMs ?? SENTINEL_COMMAND_TIMEOUT_MS,
        // Learns of a failover from the sentinels' +switch-master at once, rather than when the
        // old primary's connection finally drops.
        failoverDetector: true,
      });
    case 'cluster': {
      if (o.oneSlot) {
        const slot = calculateSlot(o.oneSlot.key);
        return new Redis({
          ...requests,
          ...auth,
          enableOfflineQueue: !producer,
          retryStrategy,
          Connector: slotConnector({
            seeds: t.nodes,
            slot,
            ...(t.username ? { username: t.username } : {}),
            ...(t.password ? { password: t.password } : {}),
            ...(tls ? { tls } : {}),
            askTimeoutMs: producer ? 2_000 : WORKER_SLOTS_REFRESH_TIMEOUT_MS,
            retry: retryStrategy,
            ...(o.connectionName ? { connectionName: o.connectionName } : {}),
          }),
          reconnectOnError: slotMovedAway(slot),
        });
      }
      const options: ClusterOptions = {
        enableOfflineQueue: !producer,
        enableReadyCheck: true,
        // How long the slot map may take to come. ioredis' 1 s is too short when a fleet connects
        // at once (after a failover, a mass reboot): each refresh given up is started again from a
        // new connection, and the masters spend their time on abandoned ones (bench/README.md, Fleet).
        ...(producer ? {} : { slotsRefreshTimeout: WORKER_SLOTS_REFRESH_TIMEOUT_MS }),
        clusterRetryStrategy: retryStrategy,
        // Per-node connections: ioredis forces their own retryStrategy off and refreshes slots instead.
        redisOptions: { ...requests, ...auth },
      };
      return new Cluster(t.nodes, options);
    }
    default:
      return t satisfies never;
  }
}

export const producerConnection = (target: RedisTarget | string): RedisConnection => connect(target, 'producer');
export const workerConnection = (target: RedisTarget | string): RedisConnection => connect(target, 'worker');

export function tlsOptions(t: RedisTarget): ConnectionOptions | undefined {
  if (!t.tls) return undefined;
  if (!t.tls.caFile) return {};
  try {
    return { ca: readFileSync(t.tls.caFile) };
  } catch (err) {
    throw new ConfigError(`REDIS_TLS_CA_FILE: cannot read ${t.tls.caFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** Resolves once the connection is ready, or rejects after `ms` (the caller decides whether that is fatal). */
export function whenReady(redis: RedisConnection, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis did not answer within ${ms} ms`));
    }, ms);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/**
 * Every key matching `pattern`, without KEYS: SCAN on the server, or on every master of a
 * Cluster (a Cluster has no scan of its own; each master holds its slots' keys).
 */
export async function* scanKeys(redis: RedisConnection, pattern: string, count = 200): AsyncGenerator<string[]> {
  const servers: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== '0');
  }
}
