import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import type { RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { announceRuns } from '../../../../workers/engine/announce-runs.ts';

// The announcement is written at start, retried while Redis refuses, and written again whenever
// the connection comes back (a Redis that lost its data must learn it again without a restart).

class FakeConnection extends EventEmitter {
  readonly writes: [string, string][] = [];
  failing = 0;
  async set(key: string, value: string): Promise<'OK'> {
    if (this.failing > 0) {
      this.failing--;
      throw new Error('connection closed');
    }
    this.writes.push([key, value]);
    return 'OK';
  }
}

const start = (redis: FakeConnection, retryMs = 10) =>
  announceRuns({
    redis: redis as unknown as RedisConnection,
    prefix: 'p',
    queue: 'vm-node-{n1}',
    runbooks: ['residual-multipath-cleanup', 'orphaned-pod-volumes'],
    by: 'n1',
    retryMs,
    log: createLogger('test', 'silent'),
  });

const settle = () => new Promise((r) => setTimeout(r, 50));

describe('announceRuns', () => {
  it('writes once at start, under the queue', async () => {
    const redis = new FakeConnection();
    const stop = start(redis);
    await settle();
    expect(redis.writes.map(([k]) => k)).toEqual(['p:vm-node-{n1}:vm:runs']);
    expect(JSON.parse(redis.writes[0]![1])).toMatchObject({ runbooks: ['residual-multipath-cleanup', 'orphaned-pod-volumes'], by: 'n1' });
    stop();
  });

  it('tries again while Redis refuses, then stops trying', async () => {
    const redis = new FakeConnection();
    redis.failing = 2;
    const stop = start(redis);
    await settle();
    expect(redis.writes).toHaveLength(1);
    stop();
  });

  it('writes again each time the connection is ready again, and not after it was stopped', async () => {
    const redis = new FakeConnection();
    const stop = start(redis);
    await settle();
    redis.emit('ready');
    await settle();
    expect(redis.writes).toHaveLength(2);
    stop();
    redis.emit('ready');
    await settle();
    expect(redis.writes).toHaveLength(2);
    expect(redis.listenerCount('ready')).toBe(0);
  });
});
