import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../src/catalogue/queues.ts';
import { scanQueues } from '../../src/console/queue-scan.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { agentSeen, presenceKey, queuePresence } from '../../src/queues/agent-presence.ts';
import { producerConnection, type RedisConnection } from '../../src/queues/redis.ts';
import { createRunbookWorker, type RunbookWorker } from '../../workers/engine/runbook-worker.ts';
import type { RunbookRegistry } from '../../workers/runbooks/registry.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';
import { waitFor } from '../support/wait.ts';

// A live worker's sign of life never lapses between two renewals: the console's fleet page and
// the cluster worker's no-agent check read it (src/queues/agent-presence.ts). BullMQ's own
// stalled-check key lives exactly one stalled interval and lapsed between checks, which read as an
// agent flickering away under load.

const INTERVAL = 600;

describe('a worker\'s presence on its queue', () => {
  const prefix = uniquePrefix('presence');
  const queue = nodeQueueName('presence-a');
  let redis: RedisConnection;
  let worker: RunbookWorker;

  beforeAll(async () => {
    redis = producerConnection(redisUrl());
    await new Promise((ready) => redis.once('ready', ready));
    worker = createRunbookWorker({
      queue, redis: redisUrl(), prefix, ranOn: 'presence-a', registry: {} as RunbookRegistry, modeOf: () => 'dry-run',
      accepts: () => undefined, lockDurationMs: INTERVAL, log: createLogger('test', 'silent'),
    });
  });
  afterAll(async () => {
    await worker.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  it('keeps at least one whole interval in hand at every reading while the worker runs', async () => {
    await waitFor('the first renewal', async () => (await redis.exists(presenceKey(prefix, queue))) === 1 || undefined);
    let least = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 60; i++) {
      const [scan] = await scanQueues(redis, prefix, [queue]);
      least = Math.min(least, scan!.workerCheckTtlMs);
      expect(await agentSeen(redis, prefix, queue)).toBe(true);
      expect((await queuePresence(redis, prefix, queue, Date.now())).agentSeen).toBe(true);
      await sleep(INTERVAL / 12);
    }
    // A renewal every half interval, each good for two: a renewal late by a whole interval is still no lapse.
    expect(least).toBeGreaterThanOrEqual(INTERVAL);
  });

  it('lapses within two intervals once the worker stops', async () => {
    await worker.close();
    await sleep(2 * INTERVAL + 100);
    expect(await redis.exists(presenceKey(prefix, queue))).toBe(0);
    expect(await agentSeen(redis, prefix, queue)).toBe(false);
    expect((await scanQueues(redis, prefix, [queue]))[0]!.workerCheckTtlMs).toBe(-2);
  });
});
