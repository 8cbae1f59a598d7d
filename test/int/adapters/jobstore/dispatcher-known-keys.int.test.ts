import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { type Enqueued, StoreUnavailableError } from '../../../../src/core/jobs/job-store.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { dedupWindows, type DedupWindows } from '../../../../src/core/config/derived.ts';

// The dispatcher answers a key it stored from memory, without Redis, only within a bound it can
// prove (issue 8): never past the smallest dedup window of the queue minus a clock margin, never
// longer than knownKeyMaxMs, and never after the connection dropped.

const job = (key: string, node = 'worker-known'): ResidualMultipathJob => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key,
  target: { node },
  evidence: [{ source: 'api', summary: 'test', raw: null }],
});

describe('dispatcher known keys', () => {
  const prefix = uniquePrefix('known');
  let redis: RedisConnection;
  let admin: Redis;
  // Starts at the real time: a job's stored timestamp comes from BullMQ's own Date.now().
  let clock = Date.now();
  const dispatchers: Dispatcher[] = [];
  const dispatcher = (opts: { dedupWindowMs?: DedupWindows; knownKeyMaxMs?: number; onStored?: (jobs: readonly Enqueued[]) => void } = {}) => {
    const d = new Dispatcher(redis, { prefix, timeoutMs: 2_000, now: () => clock, sealer: testSealer('receiver'), ...opts });
    dispatchers.push(d);
    return d;
  };
  const jobKey = (key: string, node = 'worker-known') => `${prefix}:${nodeQueueName(node)}:${key}`;

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    admin = new Redis(redisUrl());
  });
  afterAll(async () => {
    await Promise.all(dispatchers.map((d) => d.close()));
    redis.disconnect();
    admin.disconnect();
    await dropPrefix(prefix);
  });

  it('answers a repeat from memory, even when the job was deleted behind its back, until knownKeyMaxMs', async () => {
    clock = Date.now();
    const d = dispatcher({ knownKeyMaxMs: 10_000 });
    const [first] = await d.enqueue([job('known_a_000000000001')]);
    expect(first).toMatchObject({ deduplicated: false, queue: nodeQueueName('worker-known') });
    // An operator deletes the job: within the cap the repeat is still folded (no Redis read)...
    await admin.del(jobKey('known_a_000000000001'));
    clock += 9_000;
    expect((await d.enqueue([job('known_a_000000000001')]))[0]!.deduplicated).toBe(true);
    expect(await admin.exists(jobKey('known_a_000000000001'))).toBe(0);
    // ...and after it, Redis is asked again and the job is stored again.
    clock += 2_000;
    expect((await d.enqueue([job('known_a_000000000001')]))[0]!.deduplicated).toBe(false);
    expect(await admin.exists(jobKey('known_a_000000000001'))).toBe(1);
  });

  it("never remembers past the queue's smallest dedup window minus the clock margin", async () => {
    clock = Date.now();
    // Window 61 s, margin 60 s: remembered for 1 s only, whatever knownKeyMaxMs says.
    const d = dispatcher({ dedupWindowMs: dedupWindows(61), knownKeyMaxMs: 3_600_000 });
    await d.enqueue([job('known_b_000000000001')]);
    await admin.del(jobKey('known_b_000000000001'));
    clock += 500;
    expect((await d.enqueue([job('known_b_000000000001')]))[0]!.deduplicated).toBe(true);
    clock += 600;
    expect((await d.enqueue([job('known_b_000000000001')]))[0]!.deduplicated).toBe(false);
  });

  it("remembers a key it found stored by someone else, from that job's own timestamp", async () => {
    clock = Date.now();
    const writer = dispatcher();
    await writer.enqueue([job('known_c_000000000001')]);
    const reader = dispatcher({ dedupWindowMs: dedupWindows(61), knownKeyMaxMs: 3_600_000 });
    // The job was stored at `clock`; 0.8 s later the reader sees it stored: 0.2 s of the 1 s bound left.
    clock += 800;
    expect((await reader.enqueue([job('known_c_000000000001')]))[0]!.deduplicated).toBe(true);
    await admin.del(jobKey('known_c_000000000001'));
    clock += 100;
    expect((await reader.enqueue([job('known_c_000000000001')]))[0]!.deduplicated).toBe(true);
    clock += 200;
    expect((await reader.enqueue([job('known_c_000000000001')]))[0]!.deduplicated).toBe(false);
  });

  it('forgets everything when the connection drops, and answers 503 while it is down', async () => {
    const conn = producerConnection(redisUrl());
    const d = new Dispatcher(conn, { prefix, timeoutMs: 1_000, now: () => clock, sealer: testSealer('receiver') });
    try {
      await d.enqueue([job('known_d_000000000001')]);
      await admin.del(jobKey('known_d_000000000001'));
      conn.disconnect(true);
      await new Promise((r) => conn.once('close', r));
      await expect(d.enqueue([job('known_d_000000000001')])).rejects.toBeInstanceOf(StoreUnavailableError);
      await new Promise((r) => (conn.status === 'ready' ? r(undefined) : conn.once('ready', r)));
      expect((await d.enqueue([job('known_d_000000000001')]))[0]!.deduplicated).toBe(false);
      expect(await admin.exists(jobKey('known_d_000000000001'))).toBe(1);
    } finally {
      await d.close();
      conn.disconnect();
    }
  });

  it('stores a batch of many keys across queues in one go, each once', async () => {
    const d = dispatcher();
    const jobs = Array.from({ length: 60 }, (_, i) => job(`known_e_${String(i).padStart(12, '0')}`, `worker-e${i % 7}`));
    const answers = await Promise.all([d.enqueue(jobs.slice(0, 30)), d.enqueue(jobs.slice(20)), d.enqueue(jobs)]);
    const flat = answers.flat();
    expect(
      flat
        .filter((a) => !a.deduplicated)
        .map((a) => a.key)
        .sort(),
    ).toEqual(jobs.map((j) => j.key).sort());
    for (const j of jobs) expect(await admin.exists(jobKey(j.key, j.target.node))).toBe(1);
  });

  it('tells onStored about each job it stored as new, once, and not about jobs folded into existing ones', async () => {
    clock = Date.now();
    const told: string[][] = [];
    const d = dispatcher({ onStored: (jobs) => told.push(jobs.map((j) => j.key)) });
    await d.enqueue([job('told_a_000000000001'), job('told_b_000000000001', 'worker-told')]);
    // A second dispatcher (another replica) sees both stored already: it is told nothing.
    const other = dispatcher({ onStored: (jobs) => told.push(jobs.map((j) => `other:${j.key}`)) });
    expect((await other.enqueue([job('told_a_000000000001')]))[0]!.deduplicated).toBe(true);
    await Promise.all([d.enqueue([job('told_c_000000000001')]), d.enqueue([job('told_a_000000000001')])]);
    expect(told.flat().sort()).toEqual(['told_a_000000000001', 'told_b_000000000001', 'told_c_000000000001']);
  });
});
