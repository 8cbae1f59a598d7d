import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';

// Integration tests need a real Redis. Use REDIS_URL when it answers, else the machine's
// 127.0.0.1:6379, else start a private redis-server on a free port for this run. Tests keep
// their own key prefixes (test/support/redis.ts), so sharing a Redis never mixes runs.

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

async function answers(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  for (const url of [process.env['REDIS_URL'], 'redis://127.0.0.1:6379'].filter((u): u is string => !!u)) {
    if (await answers(url)) {
      project.provide('redisUrl', url);
      return async () => {};
    }
  }
  if (spawnSync('redis-server', ['--version']).error) {
    throw new Error('integration tests need Redis: set REDIS_URL, run one on 127.0.0.1:6379, or install redis-server');
  }
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await answers(url)); i++) await new Promise((r) => setTimeout(r, 50));
  project.provide('redisUrl', url);
  return async () => {
    child.kill('SIGTERM');
  };
}
