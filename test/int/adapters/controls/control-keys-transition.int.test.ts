import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import type { ApprovalRecord, ParkedJob } from '../../../../src/core/controls/records.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// The readers of per-queue control keys (issue 30): they merge every registered queue's records,
// take a record only under the queue it names, and, for a rolling upgrade, still read (and decide
// in) the shared keys agents of the release before wrote.

const prefix = uniquePrefix('ctltrans');
const fleet = controlKeys(prefix);
const qa = nodeQueueName('ta');
const qb = nodeQueueName('tb');
let redis: Redis;
let api: OperatorActions;
let clock = Date.parse('2026-12-05T02:00:00Z');
let stored: TestJobs;

const request = (jobId: string, queue: string): ApprovalRecord => ({
  jobId,
  queue,
  runbook: 'residual-multipath-cleanup',
  node: 'old',
  jobCreatedAt: 1,
  state: 'pending',
  summary: 's',
  steps: [{ id: 'release', description: 'release', why: 'high risk' }],
  requestedAt: new Date(clock).toISOString(),
  expiresAt: new Date(clock + 3_600_000).toISOString(),
});
const parked = (jobId: string, queue: string, since = new Date(clock).toISOString()): ParkedJob => ({
  jobId,
  queue,
  runbook: 'residual-multipath-cleanup',
  reason: 'approval',
  why: 'w',
  since,
});

beforeAll(async () => {
  redis = new Redis(redisUrl());
  stored = testJobs(redis, prefix);
  await redis.sadd(knownQueuesKey(prefix), qa, qb);
  api = new OperatorActions({
    redis,
    prefix,
    jobs: stored.store,
    caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
    approvalTtlMs: 3_600_000,
    configuredModes: { default: 'dry-run', runbooks: {} },
    now: () => new Date(clock),
  });
});
afterAll(async () => {
  await stored?.close();
  await dropPrefix(prefix);
  redis.disconnect();
});

describe('control records under each queue, read together', () => {
  it('lists a request an agent of the release before made in the shared keys, and decides it there, where that agent reads it', async () => {
    await redis.set(fleet.legacyApproval('old-1'), JSON.stringify(request('old-1', qa)));
    await redis.hset(fleet.legacyParked, 'old-1', JSON.stringify(parked('old-1', qa)));
    expect((await api.pendingApprovals()).map((a) => a.jobId)).toEqual(['old-1']);
    const out = await api.approve('old-1', { by: 'carol' });
    expect(out.ok).toBe(true);
    expect(JSON.parse((await redis.get(fleet.legacyApproval('old-1')))!)).toMatchObject({ state: 'approved', decidedBy: 'carol' });
    expect(await redis.exists(queueControlKeys(prefix, qa).approval('old-1'))).toBe(0);
  });

  it("prefers the record under the job's queue, drops a shared parked record no agent refreshed for an hour, and takes a record only under the queue it names", async () => {
    await redis.hset(fleet.legacyParked, 'dup', JSON.stringify(parked('dup', qa, new Date(clock - 10_000).toISOString())));
    await redis.hset(queueControlKeys(prefix, qa).parked, 'dup', JSON.stringify(parked('dup', qa)));
    await redis.hset(fleet.legacyParked, 'stale', JSON.stringify(parked('stale', qb, new Date(clock - 3_700_000).toISOString())));
    // Node ta's hash naming node tb's job: a node's user may write its own hash only.
    await redis.hset(queueControlKeys(prefix, qa).parked, 'of-b', JSON.stringify(parked('of-b', qb)));
    const listed = await api.store.parkedJobs();
    expect(listed.map((p) => p.jobId).sort()).toEqual(['dup', 'old-1']);
    expect(listed.find((p) => p.jobId === 'dup')!.since).toBe(new Date(clock).toISOString());
  });

  it('answers 404 for a decision on a job no queue holds, and writes no record anywhere', async () => {
    const before = (await redis.keys(`${prefix}:*`)).sort();
    const out = await api.reject('nowhere', { by: 'carol' });
    expect(out).toMatchObject({ ok: false, status: 404 });
    expect((await redis.keys(`${prefix}:*`)).sort()).toEqual(before);
  });

  it("merges the fleet trail with every queue's, newest first, capped", async () => {
    const at = (s: number) => {
      clock = Date.parse('2026-12-05T03:00:00Z') + s * 1000;
    };
    at(1);
    await api.store.audit('work-refused', 'job/a1', { by: 'ta' }, qa);
    at(2);
    await api.store.audit('pause', 'cluster', { by: 'alice' });
    at(3);
    await api.store.audit('approval-requested', 'job/b1', { by: 'tb' }, qb);
    at(4);
    await api.store.audit('work-refused', 'job/a2', { by: 'ta' }, qa);
    expect((await api.audit(3)).map((e) => `${e.action} ${e.target}`)).toEqual(['work-refused job/a2', 'approval-requested job/b1', 'pause cluster']);
    expect(await redis.llen(queueControlKeys(prefix, qa).audit)).toBe(2);
    expect((await redis.lrange(fleet.audit, 0, -1)).some((e) => e.includes('job/a'))).toBe(false);
  });
});
