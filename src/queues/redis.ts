import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';

// Two kinds of connection. The receiver's must fail fast when Redis is away, so a webhook gets a
// 503 (and the sender retries) instead of hanging in ioredis' offline queue. A worker's must
// wait forever for blocking commands, as BullMQ requires (maxRetriesPerRequest: null).
//
// REDIS_URL carries the user and password (redis://user:password@host:6379; each process has its
// own ACL user, deploy/README.md "Redis") and TLS (rediss://). ioredis reads both from the URL; a
// private CA for rediss:// is REDIS_TLS_CA_FILE (PEM), read from the environment here so every
// connection (the receiver's, the workers', BullMQ's duplicates of them) gets it. Unset: the
// system's CAs. The certificate's name is always checked.

type Env = Readonly<Record<string, string | undefined>>;

/** TLS options for a rediss:// URL with a private CA; nothing for other URLs. */
export function tlsOptions(url: string, env: Env = process.env): Pick<RedisOptions, 'tls'> {
  const caFile = env['REDIS_TLS_CA_FILE'];
  if (!caFile || !url.startsWith('rediss://')) return {};
  return { tls: { ca: readFileSync(caFile, 'utf8') } };
}

export function producerConnection(url: string, env: Env = process.env): Redis {
  return new Redis(url, {
    ...tlsOptions(url, env),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

export function workerConnection(url: string, env: Env = process.env): Redis {
  return new Redis(url, {
    ...tlsOptions(url, env),
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
}

/** Resolves once the connection is ready, or rejects after `ms` (the caller decides whether that is fatal). */
export function whenReady(redis: Redis, ms: number): Promise<void> {
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
