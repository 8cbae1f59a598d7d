import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { FLEET_AUDIT_SCOPE } from '../../../../src/core/controls/audit-seal.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { queueControlKeys, controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { keyringFor, type Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// Issue 30, "hide an incident": audit entries are numbered and sealed by the one process that
// writes each list (a node's agent its queue's, the receiver the fleet's), in real Redis. The
// receiver's read marks an entry written straight into Redis, and says which numbers were deleted
// and when a list was deleted and started again; the writer's own entries verify.

describe('sealed, numbered audit lists in Redis', () => {
  const prefix = uniquePrefix('audit');
  const roots = new Map([
    ['receiver.k', randomBytes(32)],
    ['cluster-worker.k', randomBytes(32)],
    ['node-agent.k', randomBytes(32)],
  ]);
  const q = nodeQueueName('node-a');
  const listKey = queueControlKeys(prefix, q).audit;
  let redis: Redis;
  let agentStore: ControlsStore;
  let receiverStore: ControlsStore;

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    // What node-a's enrolled agent holds: its queue's node-agent key only.
    const key = workKeyOf(roots.get('node-agent.k')!, 'node-agent', q);
    const agentRing: Keyring = { verify: new Map([['node-agent.k', key]]), signing: { role: 'node-agent', kid: 'k', key }, scope: q };
    agentStore = new ControlsStore(redis, prefix, () => new Date(), { allowUnsigned: false, audit: { sealer: sealerOf(agentRing)! } });
    const receiverRing = keyringFor('receiver', roots);
    receiverStore = new ControlsStore(redis, prefix, () => new Date(), {
      allowUnsigned: false,
      audit: { sealer: sealerOf(receiverRing)!, roots: receiverRing },
    });
    await redis.sadd(knownQueuesKey(prefix), q);
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('verifies what each writer wrote, marks a forged entry, and reports deleted numbers and a list started again', async () => {
    for (const n of [1, 2, 3]) await agentStore.audit('work-refused', `job/j${n}`, { by: 'node-a', why: `n${n}` }, q);
    await receiverStore.audit('mode-enforce', 'runbook/x', { by: 'kim', why: 'go' });
    let r = await receiverStore.auditReport(50);
    expect(r.entries.map((e) => [e.target, 'verified' in e ? e.verified : undefined])).toEqual(
      expect.arrayContaining([
        ['job/j1', true],
        ['job/j2', true],
        ['job/j3', true],
        ['runbook/x', true],
      ]),
    );
    expect(r.problems).toEqual([]);

    // One deleted from the middle.
    const rows = await redis.lrange(listKey, 0, -1);
    await redis.lrem(listKey, 1, rows.find((x) => x.includes('job/j2'))!);
    r = await receiverStore.auditReport(50);
    expect(r.problems).toEqual([{ list: q, missing: ['2'] }]);

    // Written straight into Redis (what node-a's Redis user can do to its own list), or an entry of it altered.
    await redis.lpush(listKey, JSON.stringify({ at: new Date().toISOString(), by: 'node-a', action: 'step-ran', target: 'job/fake', why: 'all fine', seq: 4 }));
    const [, second] = await redis.lrange(listKey, 0, 1);
    await redis.lset(listKey, 1, second!.replace('"why":"n3"', '"why":"nothing happened"'));
    r = await receiverStore.auditReport(50);
    expect(r.entries.find((e) => e.target === 'job/fake')).toMatchObject({ verified: false, unverifiedWhy: 'no seal' });
    expect(r.entries.find((e) => e.target === 'job/j3')).toMatchObject({
      verified: false,
      unverifiedWhy: expect.stringMatching(/^bad-mac/),
    });
    // The newest entry that holds is now older than one read before.
    expect(r.problems).toEqual([{ list: q, missing: [], restartedBelow: 3 }]);

    // The whole list and its counter deleted, and written again.
    await redis.del(listKey, `${listKey}:seq`);
    await agentStore.audit('work-refused', 'job/after', { by: 'node-a', why: 'x' }, q);
    r = await receiverStore.auditReport(50);
    expect(r.problems).toEqual([{ list: q, missing: [], restartedBelow: 3 }]);
    expect(r.entries.find((e) => e.target === 'job/after')).toMatchObject({ verified: true, seq: 1 });
  });

  it("an entry of node-a's put into the fleet list does not verify there", async () => {
    const row = (await redis.lrange(listKey, 0, 0))[0]!;
    await redis.lpush(controlKeys(prefix).audit, row);
    const r = await receiverStore.auditReport(50);
    const moved = r.entries.filter((e) => e.target === 'job/after');
    expect(moved.map((e) => 'verified' in e && e.verified).sort()).toEqual([false, true]);
    expect(FLEET_AUDIT_SCOPE).toBe('vm:ctl:audit');
  });
});

describe('two writers of one audit list (receiver replicas)', () => {
  const prefix = uniquePrefix('audit2');
  const roots = new Map([
    ['receiver.k', randomBytes(32)],
    ['cluster-worker.k', randomBytes(32)],
    ['node-agent.k', randomBytes(32)],
  ]);
  let redis: Redis;

  beforeAll(() => {
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it('store every entry under its own number, in order, with no gap, however their writes interleave', async () => {
    const ring = keyringFor('receiver', roots);
    // Each replica its own connection, as two processes: their commands interleave in Redis.
    const own: Redis[] = [];
    const replica = (): ControlsStore => {
      const conn = new Redis(redisUrl());
      own.push(conn);
      return new ControlsStore(conn, prefix, () => new Date(), { allowUnsigned: false, audit: { sealer: sealerOf(ring)!, roots: ring } });
    };
    onTestFinished(() => {
      for (const c of own) c.disconnect();
    });
    const [a, b] = [replica(), replica()];
    await Promise.all([a, b].flatMap((s, w) => Array.from({ length: 40 }, (_, i) => s.audit('mode-enforce', `runbook/w${w}-${i}`, { by: `op${w}` }))));
    const r = await a.auditReport(200);
    expect(r.problems).toEqual([]);
    const seqs = r.entries.map((e) => ('seq' in e ? e.seq : undefined));
    expect(seqs).toEqual(Array.from({ length: 80 }, (_, i) => 80 - i));
    // As stored (newest first), not only as the reader sorts them.
    const stored = (await redis.lrange(controlKeys(prefix).audit, 0, -1)).map((row) => (JSON.parse(row) as { seq: number }).seq);
    expect(stored).toEqual(seqs);
    expect(r.entries.every((e) => 'verified' in e && e.verified)).toBe(true);
  });

  it("reads one list's entries in their stored order, whatever their times (an append retried after a race)", async () => {
    const other = uniquePrefix('audit-order');
    const entry = (n: number, at: string) => JSON.stringify({ at, by: 'op', action: 'mode-enforce', target: `runbook/e${n}`, why: '' });
    onTestFinished(() => dropPrefix(other));
    // Stored newest first: e3 took its number after e2, but its time was read before e2's.
    await redis.rpush(
      controlKeys(other).audit,
      entry(3, '2026-12-05T10:00:01.000Z'),
      entry(2, '2026-12-05T10:00:02.000Z'),
      entry(1, '2026-12-05T10:00:00.000Z'),
    );
    await redis.rpush(queueControlKeys(other, 'vm-node-{o1}').audit, entry(9, '2026-12-05T10:00:01.500Z'));
    await redis.sadd(knownQueuesKey(other), 'vm-node-{o1}');
    const read = await new ControlsStore(redis, other).auditLog(10);
    // Lists merge by their next entry's time; within a list, its order.
    expect(read.map((e) => e.target)).toEqual(['runbook/e9', 'runbook/e3', 'runbook/e2', 'runbook/e1']);
  });
});
