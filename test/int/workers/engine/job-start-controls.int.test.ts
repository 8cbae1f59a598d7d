import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { Breakers } from '../../../../src/adapters/controls/breakers.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { createJobControls } from '../../../../workers/engine/job-controls.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// A job's start reads its modes and pauses and counts its node towards the storm breaker in one
// round trip (issue 21, job cost). What that must keep: a pause parks the job, an override
// decides the mode, an unreadable control stops the start (never read as "no pause"), and the
// storm breaker still counts and trips.

const prefix = uniquePrefix('jobstart');
const redis = new Redis(redisUrl());
const keys = controlKeys(prefix);
const caps = { nodePerHour: 0, clusterPerHour: 0, stormNodes: 2, stormWindowMs: 600_000 };
const controls = (node: string, breakers?: Parameters<typeof createJobControls>[0]['breakers']) =>
  createJobControls({
    redis,
    prefix,
    queue: `q-${node}`,
    node,
    caps,
    ...(breakers ? { breakers } : {}),
    recheckMs: 1000,
    approvalTtlMs: 60_000,
    approval: { highRisk: false, runbooks: [], maxDestructiveSteps: 0 },
    log: createLogger('test', 'silent'),
  });
const start = (node: string, configuredMode: 'dry-run' | 'enforce' = 'enforce') =>
  controls(node).begin({ jobId: `job-${node}`, queue: `q-${node}`, runbook: 'residual-multipath-cleanup', createdAt: 1, configuredMode });
const record = (o: object) => JSON.stringify({ by: 'alice', why: 'test', at: new Date().toISOString(), ...o });

afterAll(async () => {
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("a job's start", () => {
  it('takes the mode from an override and says why', async () => {
    expect((await start('start-a')).mode).toBe('enforce');
    await redis.hset(keys.modes, 'node/start-a', record({ mode: 'dry-run' }));
    const begun = await start('start-a');
    expect(begun.mode).toBe('dry-run');
    expect(begun.modeWhy).toMatch(/node start-a dry-run .*alice/);
    expect(begun.park).toBeUndefined();
  });

  it('parks while its node or the cluster is paused, and runs after the resume', async () => {
    await redis.hset(keys.pause, 'node/start-b', record({}));
    expect((await start('start-b')).park).toMatchObject({ reason: 'paused', why: expect.stringMatching(/node start-b paused by alice/) });
    await redis.hdel(keys.pause, 'node/start-b');
    await redis.hset(keys.pause, 'cluster', record({}));
    expect((await start('start-b')).park).toMatchObject({ reason: 'paused', why: expect.stringMatching(/cluster-wide pause/) });
    await redis.hdel(keys.pause, 'cluster');
    expect((await start('start-b')).park).toBeUndefined();
  });

  it('refuses to start when the controls cannot be read (never taken as "no pause")', async () => {
    const other = uniquePrefix('jobstart-broken');
    const broken = controlKeys(other);
    await redis.set(broken.pause, 'not a hash');
    try {
      const c = createJobControls({
        redis,
        prefix: other,
        queue: 'q-start-c',
        node: 'start-c',
        caps,
        recheckMs: 1000,
        approvalTtlMs: 60_000,
        approval: { highRisk: false, runbooks: [], maxDestructiveSteps: 0 },
        log: createLogger('test', 'silent'),
      });
      await expect(c.begin({ jobId: 'j', queue: 'q', runbook: 'residual-multipath-cleanup', createdAt: 1, configuredMode: 'dry-run' })).rejects.toThrow(
        /WRONGTYPE/,
      );
    } finally {
      await dropPrefix(other);
    }
  });

  it('counts its node towards the storm breaker, which trips past its cap', async () => {
    for (const node of ['storm-1', 'storm-2', 'storm-3']) await start(node);
    const storm = (await new Breakers(redis, prefix).states(caps)).find((b) => b.name === 'storm');
    expect(storm?.count).toBeGreaterThanOrEqual(3);
    expect(storm?.tripped?.why).toMatch(/nodes started recovery jobs within 600 s \(more than 2\)/);
  });

  it('counts nothing when the receiver counted the node as it stored the job, locally or through the receiver', async () => {
    const job = (node: string) => ({
      jobId: `job-${node}`,
      queue: `q-${node}`,
      runbook: 'residual-multipath-cleanup',
      createdAt: Date.now(),
      configuredMode: 'enforce' as const,
      stormCounted: true,
    });
    await controls('counted-1').begin(job('counted-1'));
    expect(await redis.zscore(keys.storm, 'counted-1')).toBeNull();
    // An enrolled agent's start asks the receiver nothing; without the mark it asks.
    const asked: string[] = [];
    const breakers = {
      reserveDestructive: () => Promise.reject(new Error('not asked here')),
      recordNodeActivity: async (_caps: unknown, node: string) => {
        asked.push(node);
        return undefined;
      },
    };
    const enrolled = (node: string) => controls(node, breakers);
    expect((await enrolled('counted-2').begin(job('counted-2'))).park).toBeUndefined();
    expect(asked).toEqual([]);
    const { stormCounted: _, ...unmarked } = job('counted-3');
    await enrolled('counted-3').begin(unmarked);
    expect(asked).toEqual(['counted-3']);
    // Stored longer ago than half the storm window (an agent that was down): its start counts again.
    await enrolled('counted-4').begin({ ...job('counted-4'), createdAt: Date.now() - caps.stormWindowMs / 2 - 1_000 });
    expect(asked).toEqual(['counted-3', 'counted-4']);
  });
});
