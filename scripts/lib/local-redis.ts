import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

// Finding a Redis for local runs (`npm start`) and the integration tests: the one named, else
// the machine's 127.0.0.1:6379, else a private redis-server on a free port that keeps nothing.

export async function redisAnswers(url: string): Promise<boolean> {
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

export interface LocalRedis {
  url: string;
  /** How it was found, for the caller to tell the user. */
  origin: 'configured' | 'local' | 'private';
  stop(): void;
}

export class NoRedisError extends Error {
  override name = 'NoRedisError';
}

/** `configured`: a URL the user named; it must answer (no silent fallback from an explicit choice). */
export async function findOrStartRedis(configured: string | undefined): Promise<LocalRedis> {
  if (configured) {
    if (!(await redisAnswers(configured))) throw new NoRedisError(`REDIS_URL=${configured} does not answer`);
    return { url: configured, origin: 'configured', stop: () => {} };
  }
  const local = 'redis://127.0.0.1:6379';
  if (await redisAnswers(local)) return { url: local, origin: 'local', stop: () => {} };
  if (spawnSync('redis-server', ['--version']).error) {
    throw new NoRedisError(
      'no Redis configured (REDIS_URL) or answering on 127.0.0.1:6379, and redis-server is not installed (Debian: apt-get install redis-server)',
    );
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'volume-medic-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await redisAnswers(url)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await redisAnswers(url))) {
    child.kill('SIGKILL');
    throw new NoRedisError(`started redis-server on port ${port} but it does not answer`);
  }
  return {
    url,
    origin: 'private',
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
