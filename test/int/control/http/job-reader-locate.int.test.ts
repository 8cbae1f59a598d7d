import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { IncidentIndex } from '../../../../src/adapters/jobstore/incident-index.ts';
import { likelyQueues } from '../../../../src/control/console/incident-detail.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { JobReader } from '../../../../src/control/http/job-reader.ts';
import { BullJobStore } from '../../../../src/adapters/jobstore/bull-job-store.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';

// GET /v1/jobs/:id reads the job from the queue the incident index recorded for it: one queue
// read, not one per known queue (5,000 node queues made that 5,000 round trips per lookup). A job
// the index does not have (trimmed, or stored before the index) is still found on its queue.

const job = (key: string, node: string): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node },
  evidence: [{ source: 'api', summary: 'test', raw: null }],
});

describe('JobReader.get with the incident index', () => {
  const prefix = uniquePrefix('locate');
  let redis: RedisConnection;
  let dispatcher: Dispatcher;
  let index: IncidentIndex;

  beforeAll(async () => {
    redis = producerConnection(redisUrl());
    index = new IncidentIndex(redis, prefix);
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), index });
    // Twenty node queues, one job each; the job looked for is on the last queue in name order.
    await dispatcher.enqueue(Array.from({ length: 20 }, (_, i) => job(`locate_${String(i).padStart(16, '0')}`, `node-${String(i).padStart(2, '0')}`)));
  });
  afterAll(async () => {
    await dispatcher.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  it('reads only the indexed queue for an indexed job', async () => {
    const reader = new JobReader(new BullJobStore({ redis, prefix, queue: (n) => dispatcher.queue(n) }), likelyQueues({ redis, prefix, incidents: index }));
    const opened = vi.spyOn(dispatcher, 'queue');
    const found = await reader.get('locate_0000000000000019');
    expect(found).toMatchObject({ id: 'locate_0000000000000019', queue: nodeQueueName('node-19') });
    expect([...new Set(opened.mock.calls.map((c) => c[0]))]).toEqual([nodeQueueName('node-19')]);
    opened.mockRestore();
  });

  it('still finds a job the index does not have, on its queue', async () => {
    const entry = await index.locate('locate_0000000000000007');
    await index.forget([entry!.member]);
    const reader = new JobReader(new BullJobStore({ redis, prefix, queue: (n) => dispatcher.queue(n) }), likelyQueues({ redis, prefix, incidents: index }));
    expect(await reader.get('locate_0000000000000007')).toMatchObject({ queue: nodeQueueName('node-07') });
    expect(await reader.get('locate_0000000000009999')).toBeUndefined();
  });
});
