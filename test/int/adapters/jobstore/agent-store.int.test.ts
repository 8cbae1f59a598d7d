import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import { producerConnection } from '../../../../src/adapters/redis/redis.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// The agents' job store owns its connections: given where Redis is, it opens them, and its
// consumer and enqueuer share the command one, so an agent that consumes its queue and stores its
// own checks' jobs holds two connections (that one and BullMQ's blocking one), not three; close()
// quits them all.

const prefix = uniquePrefix('agent-store');
const queue = nodeQueueName('store-a');
const admin = producerConnection(redisUrl());

/** This store's connections in CLIENT LIST: its own by name, BullMQ's blocking one by the queue's. */
async function held(process: string): Promise<number> {
  const blocking = `${prefix}:${Buffer.from(queue).toString('base64')}`;
  const names = ((await admin.client('LIST')) as string).split('\n').map((l) => /\bname=(\S*)/.exec(l)?.[1] ?? '');
  return names.filter((n) => n.startsWith(`volume-medic:${process}:`) || n === blocking).length;
}

afterAll(async () => {
  await dropPrefix(prefix);
  admin.disconnect();
});

describe("an agent's job store", () => {
  it('consumes and enqueues on two connections, and quits them when it closes', async () => {
    const store = new AgentStore({ redis: redisUrl(), process: 'store-a', prefix, log: pino({ level: 'silent' }) });
    const ran: string[] = [];
    const consumer = store.consume({ queue, lockDurationMs: 5_000, keepFinished: { age: 60 } }, async (job) => {
      ran.push(job.id);
      return {};
    });
    await consumer.ready();
    const job: RemediationJob = {
      version: 1,
      key: 'store-a-1',
      runbook: 'residual-multipath-cleanup',
      target: { node: 'store-a' },
      evidence: [{ source: 'api', summary: 'test', raw: null }],
    };
    expect(await store.enqueuer({ timeoutMs: 5_000, sealer: undefined }).enqueue([job])).toMatchObject([{ queue, deduplicated: false }]);
    await waitFor('the job ran', async () => (ran.length === 1 ? true : undefined));
    expect(await held('store-a')).toBe(2);
    expect(store.connections.states().map((c) => c.name)).toEqual(['worker']);
    await store.close();
    expect(consumer.running()).toBe(false);
    await waitFor('its connections gone', async () => ((await held('store-a')) === 0 ? true : undefined));
  });

  it("opens a named connection once, and an enqueuer on it (the cluster worker's producer)", async () => {
    const store = new AgentStore({ redis: redisUrl(), process: 'store-b', prefix, log: pino({ level: 'silent' }) });
    const producer = store.held('producer', 'producer');
    expect(store.held('producer', 'producer')).toBe(producer);
    store.enqueuer({ timeoutMs: 5_000, sealer: undefined }, 'producer');
    expect(store.connections.states().map((c) => c.name)).toEqual(['worker', 'producer']);
    await store.close();
  });
});
