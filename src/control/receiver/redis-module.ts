import type { Redis } from 'ioredis';
import type { Logger } from '../../adapters/observability/logger.ts';
import { RedisConnections } from '../../adapters/redis/redis-connections.ts';
import { ackReplicas, describeTarget, type RedisTarget, redisTarget } from '../../adapters/redis/redis-target.ts';
import { type RedisConnection, whenReady } from '../../adapters/redis/redis.ts';
import { ReplicaAck, replicaAckKey } from '../../adapters/redis/replica-ack.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';

// The receiver's Redis: every connection of the process is opened, brought back and closed by one
// owner; REDIS_ACK_REPLICAS asks for a replica's acknowledgement on a connection of its own.

/** How often an idle receiver asks for a replica acknowledgement (REDIS_ACK_REPLICAS > 0). */
const REPLICA_ACK_WATCH_MS = 10_000;

export interface RedisModule {
  target: RedisTarget;
  connections: RedisConnections;
  /** The producer connection: jobs, controls, the console's reads. */
  redis: RedisConnection;
  replicaAck?: ReplicaAck;
  close(): Promise<void>;
}

export async function openRedis(config: ReceiverConfig, log: Logger): Promise<RedisModule> {
  const target = redisTarget(config);
  const connections = new RedisConnections({ target, process: 'receiver', log: log.child({ component: 'redis' }) });
  const redis = connections.open('producer', 'producer');
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis connection error'));
  // 202 only once a replica has the job (config refuses it on a Cluster, so this is a single
  // server or a Sentinel primary).
  const replicas = ackReplicas(config);
  let replicaAck: ReplicaAck | undefined;
  if (replicas > 0 && target.kind !== 'cluster') {
    const ackConnection = connections.open('replica-ack', 'producer') as Redis;
    ackConnection.on('error', (err) => log.debug({ err: err.message }, 'redis connection error (replica acknowledgement)'));
    replicaAck = new ReplicaAck(ackConnection, { replicas, timeoutMs: config.redisAckTimeoutMs, markerKey: replicaAckKey(config.queuePrefix) });
    // An idle receiver still says within this long whether a replica would acknowledge.
    replicaAck.watch(REPLICA_ACK_WATCH_MS);
  }
  log.info({ redis: describeTarget(target), ackReplicas: replicaAck ? replicas : 0 }, 'redis');
  try {
    await whenReady(redis, 5_000);
  } catch (err) {
    // Serve anyway: /readyz says not ready and webhooks get 503 until Redis answers.
    log.warn({ err: (err as Error).message }, 'Redis is not reachable yet; webhooks will get 503 until it is');
  }
  return {
    target,
    connections,
    redis,
    ...(replicaAck ? { replicaAck } : {}),
    close: async () => {
      replicaAck?.close();
      await connections.close();
    },
  };
}
