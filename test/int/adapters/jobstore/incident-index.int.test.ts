import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { IncidentIndex, incidentIndexKey } from '../../../../src/adapters/jobstore/incident-index.ts';
import { BullJobStore } from '../../../../src/adapters/jobstore/bull-job-store.ts';
import { listIncidents, type IncidentFilter, type ListOptions } from '../../../../src/control/console/incident-list.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// The console's index paging (src/adapters/jobstore/incident-index.ts, incident-list.ts) against a real
// Redis and real BullMQ queues: pages newest first without gaps or repeats at every boundary, the
// node / runbook / state filters with their bounds, jobs gone from their queue, trimming, and
// finding a job's queue by its id.

const NODES = ['idx-a', 'idx-b', 'idx-c'];
const RUNBOOKS = ['residual-multipath-cleanup', 'rbd-unmap'] as const;

describe("the console's incident index", () => {
  const prefix = uniquePrefix('index');
  let redis: Redis;
  let index: IncidentIndex;
  const queues = new Map<string, Queue>();
  const queue = (name: string): Queue => {
    let q = queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: redis, prefix, skipVersionCheck: true });
      queues.set(name, q);
    }
    return q;
  };
  const jobs = new BullJobStore({
    get redis() {
      return redis;
    },
    prefix,
    queue,
  });
  /** id -> what the test made of it, newest last (the index's order reversed). */
  const made: { id: string; node: string; runbook: string; queue: string; state: 'waiting' | 'failed' | 'completed' }[] = [];

  beforeAll(async () => {
    redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    index = new IncidentIndex(redis, prefix);
    // 30 jobs over 3 nodes, stored in 6 batches of 5 (one ms apart, as the receiver records them).
    for (let b = 0; b < 6; b++) {
      const batch = [];
      for (let k = 0; k < 5; k++) {
        const n = b * 5 + k;
        const node = NODES[n % 3]!;
        const runbook = RUNBOOKS[n % 4 === 0 ? 1 : 0];
        const q = nodeQueueName(node);
        const id = `job-${String(n).padStart(2, '0')}`;
        await queue(q).add(runbook, { runbook, n }, { jobId: id });
        made.push({ id, node, runbook, queue: q, state: 'waiting' });
        batch.push({ queue: q, id, node, runbook });
      }
      await index.record(batch, 1_000_000 + b);
    }
    // Every third job failed and every fifth (not failed) completed, by a real worker.
    for (const node of NODES) {
      const w = new Worker(nodeQueueName(node), null, { connection: redis, prefix, autorun: false, skipVersionCheck: true });
      for (;;) {
        const job = (await w.getNextJob('t', { block: false })) as Job | undefined;
        if (!job) break;
        const m = made.find((x) => x.id === job.id)!;
        const n = Number(m.id.slice(4));
        if (n % 3 === 0) {
          await job.moveToFailed(new Error('test'), 't', false);
          m.state = 'failed';
        } else {
          await job.moveToCompleted({ outcome: 'succeeded' }, 't', false);
          m.state = 'completed';
        }
      }
      await w.close();
    }
  });
  afterAll(async () => {
    for (const q of queues.values()) await q.close();
    redis.disconnect();
    await dropPrefix(prefix);
  });

  /** Every page from the newest, following `next`, with the ids of each. */
  const walk = async (f: Omit<IncidentFilter, 'before'>, o: ListOptions): Promise<{ pages: string[][]; partial: boolean[] }> => {
    const pages: string[][] = [];
    const partial: boolean[] = [];
    let before: number | undefined;
    for (let guard = 0; guard < 100; guard++) {
      const p = await listIncidents(index, jobs, { ...f, ...(before !== undefined ? { before } : {}) }, o);
      pages.push(p.items.map((i) => i.id));
      partial.push(p.partial);
      if (p.next === undefined) return { pages, partial };
      before = p.next;
    }
    throw new Error('more than 100 pages');
  };
  const newestFirst = (pred: (m: (typeof made)[number]) => boolean) =>
    made
      .filter(pred)
      .map((m) => m.id)
      .reverse();

  it('pages newest first, without gaps or repeats, whatever the page size and chunk', async () => {
    for (const [limit, chunk] of [
      [1, 500],
      [7, 500],
      [5, 5],
      [10, 3],
      [30, 500],
      [31, 4],
    ] as const) {
      const { pages } = await walk({}, { limit, chunk });
      expect(pages.flat(), `limit ${limit}, chunk ${chunk}`).toEqual(newestFirst(() => true));
      expect(pages.slice(0, -1).every((p) => p.length === limit)).toBe(true);
    }
  });

  it('filters by node (found by Redis, newest first) and by runbook, paged', async () => {
    for (const node of NODES) expect((await walk({ node }, { limit: 3 })).pages.flat()).toEqual(newestFirst((m) => m.node === node));
    expect((await walk({ runbook: 'rbd-unmap' }, { limit: 2, chunk: 4 })).pages.flat()).toEqual(newestFirst((m) => m.runbook === 'rbd-unmap'));
    expect((await walk({ node: 'idx-nobody' }, { limit: 3 })).pages).toEqual([[]]);
  });

  it('filters by state, asking Redis about at most checkMax entries a page and saying when it stopped', async () => {
    expect((await walk({ state: 'failed' }, { limit: 4 })).pages.flat()).toEqual(newestFirst((m) => m.state === 'failed'));
    expect((await walk({ state: 'completed', node: 'idx-b' }, { limit: 2 })).pages.flat()).toEqual(
      newestFirst((m) => m.state === 'completed' && m.node === 'idx-b'),
    );
    // checkMax 4: each page asks about 4 entries, stops partial, and the cursor goes on from there.
    const bounded = await walk({ state: 'failed' }, { limit: 50, checkMax: 4 });
    expect(bounded.pages.flat()).toEqual(newestFirst((m) => m.state === 'failed'));
    expect(bounded.pages.length).toBeGreaterThan(5);
    expect(bounded.partial.slice(0, -1).every(Boolean)).toBe(true);
    expect((await walk({ state: 'waiting' }, { limit: 10 })).pages.flat()).toEqual([]);
  });

  it('stops after scanMax entries with nothing found, and offers the older ones', async () => {
    const p = await listIncidents(index, jobs, { state: 'waiting' }, { limit: 5, scanMax: 10, chunk: 4 });
    expect(p).toMatchObject({ items: [], scanned: 10, partial: true });
    expect(p.next).toBeDefined();
  });

  it('leaves out a job gone from its queue and drops its entry from the index', async () => {
    const gone = made[made.length - 2]!;
    expect(await index.size()).toBe(30);
    await queue(gone.queue).remove(gone.id);
    const p = await listIncidents(index, jobs, {}, { limit: 5 });
    expect(p.items.map((i) => i.id)).toEqual(newestFirst((m) => m.id !== gone.id).slice(0, 5));
    expect(await index.size()).toBe(29);
    expect(await index.locate(gone.id)).toBeUndefined();
  });

  it("finds a job's queue by its id", async () => {
    const m = made[3]!;
    expect(await index.locate(m.id)).toMatchObject({ queue: m.queue, id: m.id, node: m.node, runbook: m.runbook });
    expect(await index.locate('job-99')).toBeUndefined();
    // An id that is also a node name does not match the node field.
    expect(await index.locate('idx-a')).toBeUndefined();
  });

  it('keeps only the newest `keep` entries', async () => {
    const p2 = uniquePrefix('index-trim');
    const small = new IncidentIndex(redis, p2, 10);
    for (let b = 0; b < 4; b++)
      await small.record(
        Array.from({ length: 4 }, (_, k) => ({ queue: 'vm-node-{t}', id: `t-${b}-${k}`, runbook: 'rbd-unmap' })),
        2_000 + b,
      );
    expect(await small.size()).toBe(10);
    const kept = (await small.older(undefined, 100)).map((e) => e.id);
    expect(kept).toEqual([3, 2, 1, 0].flatMap((b) => [3, 2, 1, 0].map((k) => `t-${b}-${k}`)).slice(0, 10));
    await redis.del(incidentIndexKey(p2));
  });
});
