import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { ApprovalStore } from '../../../../src/adapters/controls/approval-store.ts';
import { queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import type { ApprovalRecord } from '../../../../src/core/controls/records.ts';
import { controlKeyring, controlSealer } from '../../../../src/core/trust/control-keys.ts';
import { keyringFor, type Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// Issue 30, attack 2 (approvals): an approval request is sealed by the worker that asks, and the
// API decides only a request whose seal holds. A request reworded in Redis (the wording an
// operator reads), one written there from nothing, or one of node-a's copied under node-b are
// refused (409, nothing decided); the worker's own request is approved.

describe('approval requests sealed by the asking worker', () => {
  const prefix = uniquePrefix('apreq');
  const roots = new Map([
    ['receiver.k', randomBytes(32)],
    ['cluster-worker.k', randomBytes(32)],
    ['node-agent.k', randomBytes(32)],
  ]);
  const files = writeControlKeys();
  let stored: TestJobs;
  let redis: Redis;
  let api: OperatorActions;

  /** The store node `n`'s enrolled agent writes requests with: its queue's node-agent key only. */
  const agentStore = (n: string): ApprovalStore => {
    const q = nodeQueueName(n);
    const key = workKeyOf(roots.get('node-agent.k')!, 'node-agent', q);
    const ring: Keyring = { verify: new Map([['node-agent.k', key]]), signing: { role: 'node-agent', kid: 'k', key }, scope: q };
    return new ApprovalStore(redis, prefix, { allowUnsigned: false, audit: { sealer: sealerOf(ring)! } });
  };
  const request = (node: string, jobId: string): ApprovalRecord => ({
    jobId,
    queue: nodeQueueName(node),
    runbook: 'residual-multipath-cleanup',
    node,
    jobCreatedAt: 1,
    state: 'pending',
    summary: 'flush mpatha',
    steps: [{ id: 'flush-map:1', description: 'multipath -f mpatha', why: 'high-risk' }],
    requestedAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  });

  beforeAll(() => {
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    const receiverRing = keyringFor('receiver', roots);
    api = new OperatorActions({
      redis,
      prefix,
      jobs: stored.store,
      caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
      approvalTtlMs: 600_000,
      configuredModes: { default: 'dry-run', runbooks: {} },
      trust: {
        sealer: controlSealer(files.keyFile),
        ring: controlKeyring(files.certFile),
        allowUnsigned: false,
        audit: { sealer: sealerOf(receiverRing)!, roots: receiverRing },
      },
      locate: async (id) => (id.startsWith('b-') ? nodeQueueName('node-b') : nodeQueueName('node-a')),
    });
  });
  afterAll(async () => {
    await stored?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it("approves the worker's own request", async () => {
    await agentStore('node-a').put(request('node-a', 'a-1'));
    const r = await api.approve('a-1', { by: 'kim', why: 'checked' });
    expect(r).toMatchObject({ ok: true, approval: { state: 'approved', decidedBy: 'kim' } });
  });

  it("refuses a request reworded in Redis, one written from nothing, and node-a's copied under node-b", async () => {
    await agentStore('node-a').put(request('node-a', 'a-2'));
    const key = queueControlKeys(prefix, nodeQueueName('node-a')).approval('a-2');
    await redis.set(key, (await redis.get(key))!.replace('multipath -f mpatha', 'multipath -ll (read-only)'));
    expect(await api.approve('a-2', { by: 'kim' })).toMatchObject({
      ok: false,
      status: 409,
      error: expect.stringMatching(/seal does not hold \(bad-mac/),
    });
    expect(await redis.get(key)).toContain('"state":"pending"');

    await redis.set(queueControlKeys(prefix, nodeQueueName('node-a')).approval('a-3'), JSON.stringify(request('node-a', 'a-3')));
    expect(await api.reject('a-3', { by: 'kim' })).toMatchObject({ ok: false, status: 409, error: expect.stringMatching(/no seal/) });

    await agentStore('node-a').put({ ...request('node-a', 'b-1'), queue: nodeQueueName('node-a') });
    const copied = JSON.parse((await redis.get(queueControlKeys(prefix, nodeQueueName('node-a')).approval('b-1')))!) as ApprovalRecord;
    await redis.set(
      queueControlKeys(prefix, nodeQueueName('node-b')).approval('b-1'),
      JSON.stringify({ ...copied, queue: nodeQueueName('node-b'), node: 'node-b' }),
    );
    expect(await api.approve('b-1', { by: 'kim' })).toMatchObject({ ok: false, status: 409 });
    // A request node-a's agent seals for node-b's queue cannot even be made with what it holds.
    await expect(agentStore('node-a').put(request('node-b', 'b-2'))).rejects.toThrow(/only/);
  });
});
