import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { scanKeys, type RedisConnection } from '../../src/adapters/redis/redis.ts';

// Each test gets its own BullMQ prefix, and removes its keys afterwards.

export const redisUrl = (): string => inject('redisUrl');

export const uniquePrefix = (name = 't'): string => `vmtest-${name}-${randomBytes(4).toString('hex')}`;

export async function dropPrefix(prefix: string): Promise<void> {
  const r = new Redis(redisUrl());
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/** dropPrefix on any topology (a Cluster: every master scanned, keys deleted one by one: they span slots). */
export async function dropPrefixOn(redis: RedisConnection, prefix: string): Promise<void> {
  for await (const keys of scanKeys(redis, `${prefix}:*`, 500)) await Promise.all(keys.map((k) => redis.unlink(k)));
}
