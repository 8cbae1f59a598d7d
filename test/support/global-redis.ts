import type { TestProject } from 'vitest/node';
import { findOrStartRedis } from '../../scripts/lib/local-redis.ts';

// Integration tests need a real Redis: REDIS_URL when set (it must answer), else the machine's
// 127.0.0.1:6379, else a private redis-server on a free port for this run. Tests keep their own
// key prefixes (test/support/redis.ts), so sharing a Redis never mixes runs.

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await findOrStartRedis(process.env['REDIS_URL'] || undefined);
  project.provide('redisUrl', redis.url);
  return async () => redis.stop();
}
