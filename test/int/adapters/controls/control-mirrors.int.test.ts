import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlMirrors, MIRROR_FRESH_MS } from '../../../../src/adapters/controls/control-mirrors.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import type { ControlTrust } from '../../../../src/core/controls/sealed-records.ts';
import { trustFromConfig } from '../../../../src/core/trust/from-config.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// The controls' copies in each node queue's slot (src/adapters/controls/control-mirrors.ts),
// kept by the receiver and read by the agents at a job's start. On one server here, copies forced
// on (a Cluster turns them on by itself: test/int/adapters/redis/redis-cluster.int.test.ts). What must hold: a
// node reads its own fields and the fleet's, never another node's; a change is in every copy when
// the API answers; a copy never goes back to an older decision; a missing or stale copy is never
// read as "no pause": the shared hashes are read instead; the copies verify as the records do.

const RUNBOOK = 'residual-multipath-cleanup';
const asked = { by: 'alice', why: 'test' };

describe("the controls' copies in the node queues' slots", () => {
  const prefix = uniquePrefix('mirrors');
  const keys = controlKeys(prefix);
  const copyOf = (node: string) => queueControlKeys(prefix, nodeQueueName(node)).controls;
  let redis: Redis;
  let sealed: ControlTrust;
  let verifying: ControlTrust;
  let clock = Date.now();
  const now = () => new Date(clock);
  const writer = () => new ControlsStore(redis, prefix, now, sealed, { mirrors: true });
  const missed: string[] = [];
  const reader = (node: string) =>
    new ControlsStore(redis, prefix, now, verifying, { mirrors: true, ownQueue: nodeQueueName(node), onCopyMissed: (q) => missed.push(q) });

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    const trust = trustFromConfig(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix }), 'receiver');
    sealed = { sealer: trust.controls.sealer!, ring: trust.controls.ring, allowUnsigned: false };
    verifying = { ring: trust.controls.ring, allowUnsigned: false };
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName('m-a'), nodeQueueName('m-b'), 'vm-cluster');
  });
  afterAll(async () => {
    await dropPrefix(prefix);
    redis.disconnect();
  });

  it("copies the fleet's fields to every node and a node's own to that node only, and marks each copy synced", async () => {
    const w = writer();
    await w.pause({ runbook: RUNBOOK }, asked);
    await w.setMode({ node: 'm-a' }, 'dry-run', asked);
    expect(await w.mirrors!.sync()).toBe(2);
    const a = await redis.hgetall(copyOf('m-a'));
    const b = await redis.hgetall(copyOf('m-b'));
    expect(a[`pause|runbook/${RUNBOOK}`]).toBe(await redis.hget(keys.pause, `runbook/${RUNBOOK}`));
    expect(a['mode|node/m-a']).toBe(await redis.hget(keys.modes, 'node/m-a'));
    expect(b[`pause|runbook/${RUNBOOK}`]).toBeDefined();
    expect(b['mode|node/m-a']).toBeUndefined();
    expect(Number(a['synced'])).toBe(clock);
    // The cluster worker's queue has no copy: it reads the shared hashes.
    expect(await redis.exists(queueControlKeys(prefix, 'vm-cluster').controls)).toBe(0);
    await w.resume({ runbook: RUNBOOK }, asked);
    await w.setMode({ node: 'm-a' }, null, asked);
  });

  it('has a change in every copy when the API answers, and a job start reads it there, verified', async () => {
    const w = writer();
    await w.mirrors!.sync();
    const before = missed.length;
    expect((await reader('m-b').startView(RUNBOOK, 'm-b')).paused).toBeUndefined();
    await w.pause(undefined, { by: 'bob', why: 'SAN upgrade' });
    expect(await redis.hget(copyOf('m-b'), 'pause|cluster')).toBe(await redis.hget(keys.pause, 'cluster'));
    expect((await reader('m-b').startView(RUNBOOK, 'm-b')).paused).toMatch(/cluster-wide pause by bob/);
    // Read from the copy: the shared hash changed behind the copies' back is not what decided.
    await redis.hdel(keys.pause, 'cluster');
    expect((await reader('m-b').startView(RUNBOOK, 'm-b')).paused).toMatch(/cluster-wide pause by bob/);
    expect(missed.length).toBe(before);
    await w.resume(undefined, asked);
    expect((await reader('m-b').startView(RUNBOOK, 'm-b')).paused).toBeUndefined();
  });

  it('takes a record in a copy only with its seal, as the shared hashes do', async () => {
    const w = writer();
    await w.mirrors!.sync();
    // Someone with the node's own Redis user writes an enforce override into its copy.
    await redis.hset(copyOf('m-a'), `mode|runbook/${RUNBOOK}`, JSON.stringify({ mode: 'enforce', by: 'mallory', why: '', at: now().toISOString(), gen: 9e12 }));
    expect((await reader('m-a').startView(RUNBOOK, 'm-a')).overrides.runbookOverride).toBeUndefined();
  });

  it('never goes back to an older decision, whichever of a sync and a change lands last', async () => {
    const w = writer();
    await w.pause('m-b', asked);
    const paused = await redis.hget(keys.pause, 'node/m-b');
    // A sync that read the shared hashes before the resume, landing after it: its copy is older.
    await w.resume('m-b', asked);
    const resumed = await redis.hget(keys.pause, 'node/m-b');
    await redis.hset(keys.pause, 'node/m-b', paused!);
    await new ControlMirrors(redis, prefix, () => clock).sync([nodeQueueName('m-b')]);
    expect(await redis.hget(copyOf('m-b'), 'pause|node/m-b')).toBe(resumed);
    await redis.hset(keys.pause, 'node/m-b', resumed!);
  });

  it('reads the shared hashes when the copy is missing or stale, never "no pause"', async () => {
    const w = writer();
    await w.pause('m-c', asked);
    // m-c is no known queue yet: its copy holds its own field, but was never synced whole.
    expect((await reader('m-c').startView(RUNBOOK, 'm-c')).paused).toMatch(/node m-c paused by alice/);
    expect(missed.at(-1)).toBe(nodeQueueName('m-c'));
    await w.mirrors!.sync([nodeQueueName('m-c')]);
    await w.pause(undefined, asked);
    await redis.hdel(copyOf('m-c'), 'pause|cluster');
    const fresh = missed.length;
    // Synced and fresh: the copy decides (its own pause still stands).
    expect((await reader('m-c').startView(RUNBOOK, 'm-c')).paused).toMatch(/node m-c paused/);
    expect(missed.length).toBe(fresh);
    await w.resume('m-c', asked);
    // A copy whose last sync is too old (no receiver synced it): the shared hashes, with the cluster pause.
    clock += MIRROR_FRESH_MS + 1;
    expect((await reader('m-c').startView(RUNBOOK, 'm-c')).paused).toMatch(/cluster-wide pause by alice/);
    expect(missed.at(-1)).toBe(nodeQueueName('m-c'));
    await w.resume(undefined, asked);
  });

  it('refuses to start, saying why, when a reader of its own slot only has no fresh copy', async () => {
    const slotOnly = new ControlsStore(redis, prefix, now, verifying, { mirrors: true, ownQueue: nodeQueueName('m-d'), copyOnly: true });
    await expect(slotOnly.startView(RUNBOOK, 'm-d')).rejects.toThrow(
      /copy of the controls is missing or older than 15 minutes .* the job starts once a receiver has synced it/,
    );
    await writer().mirrors!.sync([nodeQueueName('m-d')]);
    expect((await slotOnly.startView(RUNBOOK, 'm-d')).paused).toBeUndefined();
  });
});
