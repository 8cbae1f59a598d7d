import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { IncidentIndex, incidentIndexKey } from '../../../../src/adapters/jobstore/incident-index.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';

// The console's incident index is written in the batch's own script call on a single Redis: one
// round trip per batch (a second call with a ZADD cost a 1-alert request ~50 us of the
// receiver's CPU, bench/README.md), and what the console reads back is what it read before.

const job = (key: string, node: string): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node },
  evidence: [{ source: 'api', summary: 'test', raw: null }],
});

describe('dispatcher and the incident index', () => {
  const prefix = uniquePrefix('index');
  let redis: RedisConnection;
  let admin: Redis;
  let dispatcher: Dispatcher;
  let index: IncidentIndex;
  const sent: string[] = [];

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    admin = new Redis(redisUrl());
    // Every command this connection sends, by name.
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((cmd: { name: string }, ...rest: unknown[]) => {
      sent.push(cmd.name);
      return (send as (...a: unknown[]) => unknown)(cmd, ...rest);
    }) as typeof redis.sendCommand;
    index = new IncidentIndex(redis, prefix);
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), index });
  });
  afterAll(async () => {
    await dispatcher.close();
    redis.disconnect();
    admin.disconnect();
    await dropPrefix(prefix);
  });

  it("records new jobs in the batch's one script call, and the console reads them back, newest first", async () => {
    // The queues' first use (BullMQ's connection set-up, the known-queues set) is not what is counted.
    await dispatcher.enqueue([job('idx_warm_00000000001', 'idx-a'), job('idx_warm_00000000002', 'idx-b')]);
    sent.length = 0;
    const before = Date.now();
    const answers = await dispatcher.enqueue([
      job('idx_new_000000000001', 'idx-a'),
      job('idx_new_000000000002', 'idx-b'),
      job('idx_warm_00000000001', 'idx-a'),
    ]);
    expect(answers.map((a) => a.deduplicated)).toEqual([false, false, true]);
    expect(sent.filter((c) => c !== 'evalsha' && c !== 'eval')).toEqual([]);
    expect(sent).toHaveLength(1);
    const entries = await index.older(undefined, 10);
    expect(entries.map((e) => [e.queue, e.id, e.node, e.runbook])).toEqual([
      [nodeQueueName('idx-b'), 'idx_new_000000000002', 'idx-b', 'residual-multipath-cleanup'],
      [nodeQueueName('idx-a'), 'idx_new_000000000001', 'idx-a', 'residual-multipath-cleanup'],
      [nodeQueueName('idx-b'), 'idx_warm_00000000002', 'idx-b', 'residual-multipath-cleanup'],
      [nodeQueueName('idx-a'), 'idx_warm_00000000001', 'idx-a', 'residual-multipath-cleanup'],
    ]);
    expect(Math.floor(entries[0]!.score / 1000)).toBeGreaterThanOrEqual(before);
    expect(await admin.zcard(incidentIndexKey(prefix))).toBe(4);
  });
});
