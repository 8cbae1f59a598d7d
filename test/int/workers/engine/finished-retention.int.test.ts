import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob, RunbookName } from '../../../../src/core/catalogue/jobs.ts';
import { keepFinished, queueWindowMs } from '../../../../src/core/catalogue/policy.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { createRunbookWorker, type RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';

// How long a finished job stays (its deduplication window) is the worker's rule for its whole
// queue, not an option every job carries (issue 21: the retention options were 7% of Redis's
// work per stored job, bench/redis-add-parts.ts). A job stored by the dispatcher says nothing
// about it; the worker that finishes jobs keeps them for the window and sweeps older ones.

const NODE = 'worker-retention';
const job = (key: string): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node: NODE },
  evidence: [{ source: 'api', summary: 'test', raw: null }],
});
const registry = {
  'residual-multipath-cleanup': async (_j: unknown, ctx: { mode: RunbookResult['mode']; ranOn: string }): Promise<RunbookResult> => ({
    runbook: 'residual-multipath-cleanup',
    mode: ctx.mode,
    outcome: 'nothing-to-do',
    summary: 'test',
    facts: null,
    plan: null,
    refusals: [],
    steps: [],
    commands: [],
    ranOn: ctx.ranOn,
  }),
} as unknown as RunbookRegistry;

describe("finished jobs are kept for their queue's window by the worker", () => {
  const prefix = uniquePrefix('retention');
  let redis: RedisConnection;
  let queue: Queue;
  let d: Dispatcher;
  const workers: RunbookWorker[] = [];
  const worker = (keep?: { age: number }): RunbookWorker => {
    const w = createRunbookWorker({
      queue: queue.name,
      store: new AgentStore({ redis: redisUrl(), process: NODE, prefix, log: createLogger('test', 'silent') }),
      ranOn: NODE,
      registry,
      modeOf: (_r: RunbookName) => 'enforce',
      accepts: () => undefined,
      lockDurationMs: 30_000,
      log: createLogger('test', 'silent'),
      ...(keep ? { keepFinished: keep } : {}),
    });
    workers.push(w);
    return w;
  };

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    queue = new Queue(nodeQueueName(NODE), { connection: producerConnection(redisUrl()), prefix });
    d = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver'), knownKeyMaxMs: 0 });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await d.close();
    await queue.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  const finished = (key: string): Promise<number> => waitFor(`job ${key} finished`, async () => (await queue.getJob(key))?.finishedOn, 10_000);

  it('stores jobs with their id and retries only; the policy gives each queue one window', async () => {
    await d.enqueue([job('retention_opts_000000001')]);
    const stored = await queue.getJob('retention_opts_000000001');
    expect(stored!.opts).toMatchObject({ attempts: 4, backoff: { type: 'exponential', delay: 15_000, jitter: 0.3 } });
    expect(stored!.opts.removeOnComplete).toBeUndefined();
    expect(stored!.opts.removeOnFail).toBeUndefined();
    await queue.remove('retention_opts_000000001');
    expect(keepFinished('node')).toEqual({ age: queueWindowMs('node') / 1000 });
    expect(keepFinished('cluster', 7)).toEqual({ age: 7 });
    expect(queueWindowMs('cluster')).toBe(15 * 60_000);
  });

  it('keeps a finished job for the window and removes it when a later job finishes after it', async () => {
    const w = worker({ age: 1 });
    await d.enqueue([job('retention_first_00000001')]);
    const first = await finished('retention_first_00000001');
    expect(await queue.getJobState('retention_first_00000001')).toBe('completed');
    await new Promise((r) => setTimeout(r, Math.max(0, first + 1_200 - Date.now())));
    await d.enqueue([job('retention_second_0000001')]);
    await finished('retention_second_0000001');
    // BullMQ sweeps by age when a job finishes: the first is older than 1 s, the second is not.
    await waitFor('first job removed', async () => (await queue.getJobState('retention_first_00000001')) === 'unknown' || undefined, 5_000);
    expect(await queue.getJobState('retention_second_0000001')).toBe('completed');
    await w.close();
  });

  it("by default keeps finished jobs for the policy's window (minutes, not gone at the next finish)", async () => {
    const w = worker();
    await d.enqueue([job('retention_default_000001')]);
    const first = await finished('retention_default_000001');
    await new Promise((r) => setTimeout(r, Math.max(0, first + 1_200 - Date.now())));
    await d.enqueue([job('retention_default_000002')]);
    await finished('retention_default_000002');
    expect(await queue.getJobState('retention_default_000001')).toBe('completed');
    expect(await queue.getJobState('retention_default_000002')).toBe('completed');
    await w.close();
  });
});
