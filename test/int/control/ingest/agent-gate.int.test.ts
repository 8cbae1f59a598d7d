import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_RUNS_MAX_BYTES, agentRunsKey, readAgentRuns } from '../../../../src/adapters/jobstore/agent-runs.ts';
import { AgentStore } from '../../../../src/adapters/jobstore/agent-store.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { AgentGate } from '../../../../src/control/ingest/agent-gate.ts';
import { ingest } from '../../../../src/control/ingest/ingest.ts';
import { RUNBOOKS } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { Signal } from '../../../../src/core/signals/index.ts';
import { createRunbookWorker, type RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import type { RunbookRegistry } from '../../../../workers/engine/registry.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';

// The receiver's ingest on a real Redis with the gate the receiver passes (src/control/ingest/agent-gate.ts):
// a job of a runbook newer than 0.2.0 is stored on a node queue only once that node's worker
// announced it at its start (workers/engine/announce-runs.ts); before, it is answered as ignored
// and nothing of it is in Redis (no spent key).

const silent = createLogger('test', 'silent');
const readonlySignal = (node: string): Signal => ({
  kind: 'filesystem-readonly',
  version: 1,
  node,
  identity: ['test-ro', node],
  evidence: { source: 'npd', summary: `ReadonlyFilesystem True on ${node}`, raw: {} },
});
const recovered = (node: string): Signal => ({
  kind: 'node-recovered',
  version: 1,
  node,
  identity: ['test', node],
  evidence: { source: 'alertmanager', summary: `${node} recovered`, raw: {} },
});

describe("the receiver's gate on what a node's agent announces", () => {
  const prefix = uniquePrefix('gate');
  let redis: RedisConnection;
  let dispatcher: Dispatcher;
  const workers: RunbookWorker[] = [];
  const reads: string[] = [];

  beforeAll(async () => {
    redis = producerConnection(redisUrl());
    await new Promise((ready) => redis.once('ready', ready));
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver') });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await dispatcher.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  /** What the receiver passes ingest, the gate reading through the real announcement key (each read recorded). */
  const deps = (): Parameters<typeof ingest>[2] => ({
    lookups: new InMemoryLookups(),
    dispatcher,
    gate: new AgentGate(
      async (queue) => {
        reads.push(queue);
        return readAgentRuns(redis, prefix, queue);
      },
      { log: silent },
    ),
  });

  it('holds a readonly-filesystem-recovery job for a node with no announcement, stores nothing of it, and reads nothing for a multipath cleanup', async () => {
    const d = deps();
    const baseline = await ingest([recovered('g1')], [], d);
    expect(baseline.accepted).toHaveLength(1);
    expect(reads).toEqual([]);

    const held = await ingest([readonlySignal('g1')], [], d);
    expect(held.accepted).toEqual([]);
    expect(held.ignored).toMatchObject([{ reason: 'agent-too-old', source: 'npd' }]);
    expect(held.ignored[0]!.detail).toMatch(/^node g1's agent does not run readonly-filesystem-recovery yet/);
    expect(reads).toEqual([nodeQueueName('g1')]);
    expect(await redis.exists(agentRunsKey(prefix, nodeQueueName('g1')))).toBe(0);
    const keys = await redis.keys(`${prefix}:${nodeQueueName('g1')}:*`);
    expect(keys.filter((k) => k.includes('readonly'))).toEqual([]);
  });

  it("stores it once the node's worker started and announced what it runs", async () => {
    const queue = nodeQueueName('g2');
    workers.push(
      createRunbookWorker({
        queue,
        store: new AgentStore({ redis: redisUrl(), process: 'g2', prefix, log: silent }),
        ranOn: 'g2',
        registry: Object.fromEntries(RUNBOOKS.map((r) => [r, async () => ({ outcome: 'nothing-to-do' })])) as RunbookRegistry,
        modeOf: () => 'dry-run',
        accepts: () => 'not in this test',
        lockDurationMs: 5_000,
        log: silent,
      }),
    );
    await waitFor('the announcement', async () => (await readAgentRuns(redis, prefix, queue)) ?? undefined);
    expect((await readAgentRuns(redis, prefix, queue))?.runbooks).toEqual([...RUNBOOKS]);
    // The worker refuses everything here: the job stays visible in the store for the check.
    await workers[0]!.close();
    const r = await ingest([readonlySignal('g2')], [], deps());
    expect(r.ignored).toEqual([]);
    expect(r.accepted).toMatchObject([{ runbook: 'readonly-filesystem-recovery', queue, deduplicated: false }]);
  });

  it('reads an announcement longer than its bound as none: a node cannot make receivers fetch its whole Redis budget', async () => {
    const queue = nodeQueueName('g-long');
    const runs = { version: 1, runbooks: [...RUNBOOKS], sources: [], by: 'g-long', at: new Date().toISOString() };
    await redis.set(agentRunsKey(prefix, queue), JSON.stringify(runs));
    expect((await readAgentRuns(redis, prefix, queue))?.runbooks).toEqual([...RUNBOOKS]);
    // Still valid JSON and within the schema's per-field bounds, but padded past the byte bound.
    await redis.set(agentRunsKey(prefix, queue), JSON.stringify({ ...runs, by: 'x'.repeat(300) }) + ' '.repeat(AGENT_RUNS_MAX_BYTES));
    expect(await readAgentRuns(redis, prefix, queue)).toBeUndefined();
    await redis.del(agentRunsKey(prefix, queue));
    expect(await readAgentRuns(redis, prefix, queue)).toBeUndefined();
  });
});
