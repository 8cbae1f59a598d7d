import { Redis } from 'ioredis';

// Two kinds of connection. The receiver's must fail fast when Redis is away, so a webhook gets a
// 503 (and the sender retries) instead of hanging in ioredis' offline queue. A worker's must
// wait forever for blocking commands, as BullMQ requires (maxRetriesPerRequest: null).

export function producerConnection(url: string): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

export function workerConnection(url: string): Redis {
  return new Redis(url, {
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
