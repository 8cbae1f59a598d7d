import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { scanQueues } from '../../../../src/adapters/jobstore/queue-scan.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { agentSeen, presenceKey, queuePresence } from '../../../../src/adapters/jobstore/agent-presence.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { createRunbookWorker, type RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// A live worker's sign of life never lapses between two renewals: the console's fleet page and
// the cluster worker's no-agent check read it (src/adapters/jobstore/agent-presence.ts). BullMQ's own
// stalled-check key lives exactly one stalled interval and lapsed between checks, which read as an
// agent flickering away under load.

const INTERVAL = 600;

describe("a worker's presence on its queue", () => {
  const prefix = uniquePrefix('presence');
  const queue = nodeQueueName('presence-a');
  let redis: RedisConnection;
  let worker: RunbookWorker;

  beforeAll(async () => {
    redis = producerConnection(redisUrl());
    await new Promise((ready) => redis.once('ready', ready));
    worker = createRunbookWorker({
      queue,
      store: new AgentStore({ redis: redisUrl(), process: 'presence-a', prefix, log: createLogger('test', 'silent') }),
      ranOn: 'presence-a',
      registry: {} as RunbookRegistry,
      modeOf: () => 'dry-run',
      accepts: () => undefined,
      lockDurationMs: INTERVAL,
      log: createLogger('test', 'silent'),
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

describe('a real agent process, stopped and killed', () => {
  const prefix = uniquePrefix('presence-proc');
  const queue = nodeQueueName('presence-p');
  const INTERVAL_MS = 1_000;
  let redis: RedisConnection;
  let agent: ChildProcess;
  let state: string;

  beforeAll(async () => {
    redis = producerConnection(redisUrl());
    await new Promise((ready) => redis.once('ready', ready));
    state = mkdtempSync(join(tmpdir(), 'vm-presence-'));
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        REDIS_URL: redisUrl(),
        QUEUE_PREFIX: prefix,
        NODE_NAME: 'presence-p',
        STATE_DIR: state,
        LOCK_DURATION_MS: String(INTERVAL_MS),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('the agent to start', async () => (out.includes('READY') ? true : undefined));
    await waitFor('its first renewal', async () => ((await agentSeen(redis, prefix, queue)) ? true : undefined));
  });
  afterAll(async () => {
    agent?.kill('SIGKILL');
    redis.disconnect();
    await dropPrefix(prefix);
    rmSync(state, { recursive: true, force: true });
  });

  it('stays present through a whole interval without a renewal (a process frozen as under heavy load)', async () => {
    agent.kill('SIGSTOP');
    const until = Date.now() + 1.4 * INTERVAL_MS;
    try {
      while (Date.now() < until) {
        expect(await agentSeen(redis, prefix, queue)).toBe(true);
        await sleep(50);
      }
    } finally {
      agent.kill('SIGCONT');
    }
    await sleep(INTERVAL_MS);
    expect(await agentSeen(redis, prefix, queue)).toBe(true);
  });

  it('reads missing within two intervals of its death, the time the fleet page documents', async () => {
    agent.kill('SIGKILL');
    const died = Date.now();
    await waitFor('the agent to read absent', async () => ((await agentSeen(redis, prefix, queue)) ? undefined : true), 10_000);
    expect(Date.now() - died).toBeLessThanOrEqual(2 * INTERVAL_MS + 500);
  });
});
