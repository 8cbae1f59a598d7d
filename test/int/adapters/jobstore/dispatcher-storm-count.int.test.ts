import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Breakers, type NodeStart } from '../../../../src/adapters/controls/breakers.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import type { RbdStaleMappingJob, ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { StoreUnavailableError } from '../../../../src/core/jobs/job-store.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { verifyJobSeal } from '../../../../src/core/trust/work.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';

// The receiver counts a node towards the storm breaker where it stores the node's job (issue 48:
// an enrolled agent's ask per job start was most of the enrolled path's extra cost). What must
// hold: every job stored as new counts its node before the sender hears 202, a repeat folded
// into a stored job counts nothing, the mark that tells the agent so is under the seal and only
// where the count was made, and a count that failed answers 503 and is made at the next store.

const job = (key: string, node: string, extra: Partial<ResidualMultipathJob> = {}): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node },
  evidence: [{ source: 'npd', summary: 'test', raw: null }],
  ...extra,
});

const agentRing = () => keyringFor('node-agent', readKeys(TEST_KEYS_DIR));

describe('the dispatcher counts the nodes it stores jobs for', () => {
  const prefix = uniquePrefix('stormcount');
  const caps = { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 600_000 };
  let redis: RedisConnection;
  let admin: Redis;
  let breakers: Breakers;
  const calls: NodeStart[][] = [];
  let failNext = false;
  const dispatchers: Dispatcher[] = [];
  // Known keys off: every repeat reaches Redis, as after the known-key answer's minute.
  const dispatcher = (counting = true): Dispatcher => {
    const d = new Dispatcher(redis, {
      prefix,
      timeoutMs: 5_000,
      knownKeyMaxMs: 0,
      sealer: testSealer('receiver'),
      ...(counting
        ? {
            countNodes: async (starts: readonly NodeStart[]) => {
              calls.push([...starts]);
              if (failNext) {
                failNext = false;
                throw new Error('READONLY (test)');
              }
              return breakers.recordNodesActivity(caps, starts);
            },
          }
        : {}),
    });
    dispatchers.push(d);
    return d;
  };
  const data = async (node: string, key: string): Promise<Record<string, unknown>> =>
    JSON.parse((await admin.hget(`${prefix}:${nodeQueueName(node)}:${key}`, 'data')) ?? 'null') as Record<string, unknown>;

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    admin = new Redis(redisUrl());
    breakers = new Breakers(redis, prefix);
  });
  afterAll(async () => {
    for (const d of dispatchers) await d.close();
    redis.disconnect();
    admin.disconnect();
    await dropPrefix(prefix);
  });

  it('counts each new job’s node in one call per batch, before answering, and seals the mark into the job', async () => {
    const d = dispatcher();
    calls.length = 0;
    const answers = await d.enqueue([job('sc_new_00000000000001', 'sc-a'), job('sc_new_00000000000002', 'sc-b')]);
    expect(answers.map((a) => a.deduplicated)).toEqual([false, false]);
    expect(calls).toEqual([
      [
        { node: 'sc-a', source: 'npd' },
        { node: 'sc-b', source: 'npd' },
      ],
    ]);
    expect((await admin.zrange(controlKeys(prefix).storm, 0, -1)).sort()).toEqual(['sc-a', 'sc-b']);
    const stored = await data('sc-a', 'sc_new_00000000000001');
    expect(stored['stormCounted']).toBe(true);
    expect(verifyJobSeal(agentRing(), nodeQueueName('sc-a'), 'sc_new_00000000000001', stored, Date.now()).ok).toBe(true);
    // Taken off, the seal no longer holds: the mark cannot be added or removed in Redis.
    const { stormCounted: _, ...unmarked } = stored;
    expect(verifyJobSeal(agentRing(), nodeQueueName('sc-a'), 'sc_new_00000000000001', unmarked, Date.now()).ok).toBe(false);
  });

  it('counts nothing for a repeat folded into a stored job', async () => {
    const d = dispatcher();
    calls.length = 0;
    const [a] = await d.enqueue([job('sc_new_00000000000001', 'sc-a')]);
    expect(a?.deduplicated).toBe(true);
    expect(calls).toEqual([]);
  });

  it('answers 503 when the count fails, and counts the job at its next store though it folds into the stored one', async () => {
    const d = dispatcher();
    calls.length = 0;
    failNext = true;
    await expect(d.enqueue([job('sc_fail_0000000000001', 'sc-c')])).rejects.toThrow(StoreUnavailableError);
    expect(await admin.zscore(controlKeys(prefix).storm, 'sc-c')).toBeNull();
    const [again] = await d.enqueue([job('sc_fail_0000000000001', 'sc-c')]);
    expect(again?.deduplicated).toBe(true);
    expect(await admin.zscore(controlKeys(prefix).storm, 'sc-c')).not.toBeNull();
    // Counted once: the next repeat counts nothing.
    await d.enqueue([job('sc_fail_0000000000001', 'sc-c')]);
    expect(calls.map((c) => c.map((s) => s.node))).toEqual([['sc-c'], ['sc-c']]);
  });

  it('makes a failed count again by itself: a retry sent to another replica would fold without one', async () => {
    const d = dispatcher();
    calls.length = 0;
    failNext = true;
    await expect(d.enqueue([job('sc_fail_0000000000002', 'sc-e')])).rejects.toThrow(StoreUnavailableError);
    await waitFor('the count made again', async () => (await admin.zscore(controlKeys(prefix).storm, 'sc-e')) ?? undefined, 5_000);
    expect(calls.map((c) => c.map((s) => s.node))).toEqual([['sc-e'], ['sc-e']]);
    // Landed: a repeat now counts nothing.
    await d.enqueue([job('sc_fail_0000000000002', 'sc-e')]);
    expect(calls).toHaveLength(2);
  });

  it("counts no node for the cluster worker's jobs (its start never counted one) and marks none", async () => {
    const d = dispatcher();
    calls.length = 0;
    const stale: RbdStaleMappingJob = {
      runbook: 'rbd-stale-mapping',
      version: 1,
      key: 'sc_rbd_00000000000001',
      target: { node: 'sc-f', pool: 'kube', image: 'csi-vol-sc' },
      evidence: [{ source: 'k8s-event', summary: 'test', raw: null }],
    };
    const [a] = await d.enqueue([stale]);
    expect(a?.queue).toBe(CLUSTER_QUEUE);
    expect(calls).toEqual([]);
    expect(JSON.parse((await admin.hget(`${prefix}:${CLUSTER_QUEUE}:${stale.key}`, 'data')) ?? '{}')).not.toHaveProperty('stormCounted');
  });

  it('marks nothing where it does not count, and never keeps a mark the job came with', async () => {
    const d = dispatcher(false);
    await d.enqueue([job('sc_plain_000000000001', 'sc-d', { stormCounted: true })]);
    expect(await data('sc-d', 'sc_plain_000000000001')).not.toHaveProperty('stormCounted');
    expect(await admin.zscore(controlKeys(prefix).storm, 'sc-d')).toBeNull();
  });
});
