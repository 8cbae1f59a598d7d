import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchAdd, captureAdd, DATA_PLACEHOLDER, MAX_JOBS_PER_CALL, type BatchReply } from '../../../../src/adapters/jobstore/batch-add.ts';
import { producerConnection, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// The batch add runs BullMQ's own add script once per job inside one script call (issue 8). This
// proves it writes exactly what BullMQ's Queue.add writes: the same jobs added both ways, under
// two prefixes, leave the same keys with the same contents (stream entry ids aside), including an
// id that already exists, a paused queue and jobs of several queues in one call.

const OPTS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
  removeOnComplete: { age: 3_600 },
  removeOnFail: { age: 3_600 },
} as const;

interface Spec {
  queue: string;
  id: string;
  timestamp: number;
}

const data = (s: Spec) => ({
  runbook: 'residual-multipath-cleanup',
  version: 1,
  key: s.id,
  target: { node: s.queue },
  evidence: [{ source: 'api', summary: `for ${s.id}`, raw: { n: 1 } }],
});

/** Every key under the prefix, with its type and contents; stream entries without their ids. */
async function dump(r: Redis, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await r.keys(`${prefix}:*`)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await r.type(key);
    const name = key.slice(prefix.length);
    if (type === 'hash') out[name] = { type, value: await r.hgetall(key) };
    else if (type === 'list') out[name] = { type, value: await r.lrange(key, 0, -1) };
    else if (type === 'zset') out[name] = { type, value: await r.zrange(key, 0, -1, 'WITHSCORES') };
    else if (type === 'string') out[name] = { type, value: await r.get(key) };
    else if (type === 'set') out[name] = { type, value: (await r.smembers(key)).sort() };
    else if (type === 'stream') out[name] = { type, value: (await r.xrange(key, '-', '+')).map(([, fields]) => fields) };
    else out[name] = { type };
  }
  return out;
}

describe("batch add: BullMQ's add script, once per job, in one call", () => {
  const viaBullmq = uniquePrefix('bq');
  const viaBatch = uniquePrefix('bb');
  let redis: RedisConnection;
  let admin: Redis;
  const queues = new Map<string, Queue>();
  const queue = async (prefix: string, name: string): Promise<Queue> => {
    const k = `${prefix}/${name}`;
    let q = queues.get(k);
    if (!q) {
      q = new Queue(name, { connection: redis, prefix });
      queues.set(k, q);
      await q.client;
    }
    return q;
  };

  beforeAll(() => {
    redis = producerConnection(redisUrl());
    admin = new Redis(redisUrl());
  });
  afterAll(async () => {
    await Promise.all([...queues.values()].map((q) => q.close()));
    redis.disconnect();
    admin.disconnect();
    await dropPrefix(viaBullmq);
    await dropPrefix(viaBatch);
  });

  /** `asText`: the data given to captureAdd as its JSON text (as the dispatcher does), not to the Job. */
  async function addBoth(specs: Spec[], asText = false): Promise<BatchReply[]> {
    for (const s of specs) await (await queue(viaBullmq, s.queue)).add('residual-multipath-cleanup', data(s), { ...OPTS, jobId: s.id, timestamp: s.timestamp });
    const items = [];
    for (const s of specs) {
      const q = await queue(viaBatch, s.queue);
      const job = new Job(q, 'residual-multipath-cleanup', asText ? DATA_PLACEHOLDER : data(s), { ...OPTS, jobId: s.id, timestamp: s.timestamp }, s.id);
      items.push({ jobKey: `${viaBatch}:${s.queue}:${s.id}`, call: asText ? captureAdd(job, JSON.stringify(data(s))) : captureAdd(job) });
    }
    return new BatchAdd(redis).add(items);
  }

  it('writes what Queue.add writes: new jobs, an existing id, several queues, a paused queue', async () => {
    const t = 1_780_000_000_000;
    const first = await addBoth([
      { queue: 'vm-node-a', id: 'job_a1', timestamp: t },
      { queue: 'vm-node-b', id: 'job_b1', timestamp: t + 1 },
      { queue: 'vm-node-a', id: 'job_a2', timestamp: t + 2 },
    ]);
    expect(first).toEqual([
      { existingTimestamp: null, result: 'job_a1' },
      { existingTimestamp: null, result: 'job_b1' },
      { existingTimestamp: null, result: 'job_a2' },
    ]);
    // A paused queue: BullMQ puts new jobs on `paused` and sets no marker.
    await (await queue(viaBullmq, 'vm-node-c')).pause();
    await (await queue(viaBatch, 'vm-node-c')).pause();
    // The same id again (folded into the existing job, a `duplicated` event), and new ones.
    const second = await addBoth([
      { queue: 'vm-node-a', id: 'job_a1', timestamp: t + 10 },
      { queue: 'vm-node-c', id: 'job_c1', timestamp: t + 11 },
      { queue: 'vm-node-b', id: 'job_b2', timestamp: t + 12 },
    ]);
    expect(second).toEqual([
      { existingTimestamp: String(t), result: 'job_a1' },
      { existingTimestamp: null, result: 'job_c1' },
      { existingTimestamp: null, result: 'job_b2' },
    ]);
    const [a, b] = [await dump(admin, viaBullmq), await dump(admin, viaBatch)];
    expect(Object.keys(a)).toContain(':vm-node-a:job_a1');
    expect(Object.keys(a)).toContain(':vm-node-c:paused');
    expect(b).toEqual(a);
  });

  it('writes the same with the data given as its JSON text (encoded once by the caller)', async () => {
    const t = 1_780_000_100_000;
    const r = await addBoth(
      [
        { queue: 'vm-node-t', id: 'job_t1', timestamp: t },
        { queue: 'vm-node-t', id: 'job_t2', timestamp: t + 1 },
      ],
      true,
    );
    expect(r).toEqual([
      { existingTimestamp: null, result: 'job_t1' },
      { existingTimestamp: null, result: 'job_t2' },
    ]);
    const strip = (d: Record<string, unknown>) => Object.fromEntries(Object.entries(d).filter(([k]) => k.startsWith(':vm-node-t')));
    const [a, b] = [strip(await dump(admin, viaBullmq)), strip(await dump(admin, viaBatch))];
    expect(Object.keys(a)).toContain(':vm-node-t:job_t1');
    expect(b).toEqual(a);
    // A Job made with real data cannot have its data replaced (that would store other data than the Job's).
    const q = await queue(viaBatch, 'vm-node-t');
    expect(() => captureAdd(new Job(q, 'r', { x: 1 }, { jobId: 'job_t3' }, 'job_t3'), '{"y":2}')).toThrow(/does not carry its data/);
  });

  it('fails only the job whose key is broken, not the others of the call', async () => {
    await admin.set(`${viaBatch}:vm-node-d:job_broken`, 'not a hash');
    const q = await queue(viaBatch, 'vm-node-d');
    const item = (id: string) => ({
      jobKey: `${viaBatch}:vm-node-d:${id}`,
      call: captureAdd(new Job(q, 'r', { id }, { ...OPTS, jobId: id }, id)),
    });
    const replies = await new BatchAdd(redis).add([item('job_ok1'), item('job_broken'), item('job_ok2')]);
    expect(replies[0]).toEqual({ existingTimestamp: null, result: 'job_ok1' });
    expect(replies[1]).toMatchObject({ error: expect.any(Error) });
    expect(String((replies[1] as { error: Error }).error.message)).toMatch(/WRONGTYPE/);
    expect(replies[2]).toEqual({ existingTimestamp: null, result: 'job_ok2' });
    expect(await admin.lrange(`${viaBatch}:vm-node-d:wait`, 0, -1)).toEqual(['job_ok2', 'job_ok1']);
  });

  it('splits a burst into calls of at most MAX_JOBS_PER_CALL jobs, in order', async () => {
    const q = await queue(viaBatch, 'vm-node-e');
    const n = MAX_JOBS_PER_CALL * 2 + 7;
    const ids = Array.from({ length: n }, (_, i) => `job_e${i}`);
    const replies = await new BatchAdd(redis).add(
      ids.map((id) => ({ jobKey: `${viaBatch}:vm-node-e:${id}`, call: captureAdd(new Job(q, 'r', {}, { ...OPTS, jobId: id }, id)) })),
    );
    expect(replies.map((r) => ('result' in r ? r.result : r.error.message))).toEqual(ids);
    expect(await admin.llen(`${viaBatch}:vm-node-e:wait`)).toBe(n);
  });

  it('records the jobs it stores as new in the index, in the same call, and trims it', async () => {
    const q = await queue(viaBatch, 'vm-node-g');
    const indexKey = `${viaBatch}:vm:ui:incidents`;
    await admin.set(`${viaBatch}:vm-node-g:job_g_broken`, 'not a hash');
    const item = (id: string) => ({
      jobKey: `${viaBatch}:vm-node-g:${id}`,
      call: captureAdd(new Job(q, 'r', { id }, { ...OPTS, jobId: id }, id)),
      member: `m-${id}`,
    });
    const errors: Error[] = [];
    const index = (at: number, keep = 100) => ({ key: indexKey, keep, at, onError: (e: Error) => errors.push(e) });
    const at = 1_780_000_000_123;
    const first = await new BatchAdd(redis).add([item('job_g1'), item('job_g_broken'), item('job_g2')], index(at));
    expect(first.map((r) => 'result' in r)).toEqual([true, false, true]);
    // New jobs only (not the failed one), scored at * 1000 + their place, exactly.
    expect(await admin.zrange(indexKey, 0, -1, 'WITHSCORES')).toEqual(['m-job_g1', String(at * 1000), 'm-job_g2', String(at * 1000 + 1)]);
    // A repeat is not new: not recorded again; a new job is, and the trim keeps the newest `keep`.
    const second = await new BatchAdd(redis).add([item('job_g1'), item('job_g3')], index(at + 5, 2));
    expect(second).toEqual([
      { existingTimestamp: expect.any(String), result: 'job_g1' },
      { existingTimestamp: null, result: 'job_g3' },
    ]);
    expect(await admin.zrange(indexKey, 0, -1, 'WITHSCORES')).toEqual(['m-job_g2', String(at * 1000 + 1), 'm-job_g3', String((at + 5) * 1000)]);
    expect(errors).toEqual([]);
    // An index that cannot be written is reported; the jobs are stored all the same.
    await admin.del(indexKey);
    await admin.set(indexKey, 'not a sorted set');
    const third = await new BatchAdd(redis).add([item('job_g4')], index(at + 9));
    expect(third).toEqual([{ existingTimestamp: null, result: 'job_g4' }]);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/WRONGTYPE/)]);
    expect(await admin.lrange(`${viaBatch}:vm-node-g:wait`, 0, -1)).toEqual(['job_g4', 'job_g3', 'job_g2', 'job_g1']);
  });

  it('keeps index scores unique across the calls of a split burst', async () => {
    const q = await queue(viaBatch, 'vm-node-h');
    const indexKey = `${viaBatch}:vm:ui:incidents-h`;
    const n = MAX_JOBS_PER_CALL + 3;
    const ids = Array.from({ length: n }, (_, i) => `job_h${i}`);
    await new BatchAdd(redis).add(
      ids.map((id) => ({
        jobKey: `${viaBatch}:vm-node-h:${id}`,
        call: captureAdd(new Job(q, 'r', {}, { ...OPTS, jobId: id }, id)),
        member: id,
      })),
      { key: indexKey, keep: 1_000, at: 1_780_000_000_000, onError: () => {} },
    );
    const scores = (await admin.zrange(indexKey, 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1);
    expect(new Set(scores).size).toBe(n);
    expect(await admin.zrange(indexKey, 0, -1)).toEqual(ids);
  });

  it('refuses to batch what BullMQ would not add with its standard script', () => {
    const q = new Queue('vm-node-f', { connection: redis, prefix: viaBatch });
    queues.set('f', q);
    expect(() => captureAdd(new Job(q, 'r', {}, { jobId: 'delayed_1', delay: 1_000 }, 'delayed_1'))).toThrow(/supports only addStandardJob/);
  });
});
