import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Breakers, type BreakerCaps } from '../../src/adapters/controls/breakers.ts';
import { controlKeys } from '../../src/core/controls/redis-keys.ts';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import { dropPrefixOn, uniquePrefix } from './redis.ts';

// The breaker's window and trip are one Lua script in Redis: agents racing for the last slot
// cannot both get it, and the window slides with the (injected) clock. One contract, run against
// a single Redis (controls-breakers.int.test.ts) and a Redis Cluster (redis-cluster.int.test.ts),
// where every script must stay within one slot.

export function breakerContract(topology: string, connect: () => Promise<RedisConnection> | RedisConnection): void {
  describe(`blast-radius breakers in Redis (${topology})`, () => {
    const prefix = uniquePrefix('breakers');
    let redis: RedisConnection;
    let t = Date.parse('2026-12-01T00:00:00Z');
    const caps: BreakerCaps = { nodePerHour: 3, clusterPerHour: 5, stormNodes: 2, stormWindowMs: 60_000 };

    beforeAll(async () => {
      redis = await connect();
    });
    afterAll(async () => {
      for (const p of ['a', 'b', 'c', 'd', 'e']) await dropPrefixOn(redis, `${prefix}-${p}`);
      redis.disconnect();
    });

    it('gives exactly the capped number of slots to concurrent destructive steps, then blocks with the reason', async () => {
      const b = new Breakers(redis, `${prefix}-a`, () => new Date(t));
      const all = await Promise.all(Array.from({ length: 8 }, (_, i) => b.reserveDestructive(caps, { node: 'n1', jobId: `j${i}`, stepId: 's' })));
      expect(all.filter((r) => r.ok)).toHaveLength(3);
      const blocked = all.find((r) => !r.ok);
      expect(blocked && !blocked.ok && blocked.blockedBy).toMatchObject({ breaker: 'node/n1', count: 3, cap: 3 });
      // Another node is not blocked by n1's breaker, but counts towards the cluster's.
      expect((await b.reserveDestructive(caps, { node: 'n2', jobId: 'k', stepId: 's' })).ok).toBe(true);
      // A step of no node (the cluster worker's) counts towards the cluster only.
      expect(await b.reserveDestructive(caps, { jobId: 'c', stepId: 's' })).toMatchObject({ ok: true, nodeCount: 0, clusterCount: 5 });
      const states = await b.states(caps);
      expect(states.find((s) => s.name === 'node/n1')).toMatchObject({ count: 3, tripped: { breaker: 'node/n1' } });
      expect(states.find((s) => s.name === 'node/n2')).toMatchObject({ count: 1 });
      expect(states.find((s) => s.name === 'cluster')).toMatchObject({ count: 5, tripped: { breaker: 'cluster' } });
    });

    it('stays tripped after the hour has passed, until reset; reset empties the window', async () => {
      const b = new Breakers(redis, `${prefix}-b`, () => new Date(t));
      for (let i = 0; i < 3; i++) await b.reserveDestructive(caps, { node: 'n1', jobId: `j${i}`, stepId: 's' });
      t += 2 * 3_600_000;
      expect((await b.reserveDestructive(caps, { node: 'n1', jobId: 'late', stepId: 's' })).ok).toBe(false);
      expect((await b.reset('node/n1'))?.why).toMatch(/node\/n1 ran 3 destructive steps in the last hour \(cap 3\)/);
      expect((await b.states(caps)).map((s) => s.name)).not.toContain('node/n1');
      const r = await b.reserveDestructive(caps, { node: 'n1', jobId: 'after', stepId: 's' });
      expect(r).toMatchObject({ ok: true, nodeCount: 1 });
    });

    it("places a slot at the breakers' own clock, names it by when it was asked, and a repeat keeps the slot and its first time", async () => {
      const b = new Breakers(redis, `${prefix}-d`, () => new Date(t));
      const k = controlKeys(`${prefix}-d`);
      // Asked "three hours ago" by the asker's clock: still a slot in this hour, at this clock's now.
      const what = { node: 'n1', jobId: 'j', stepId: 's', askedAt: t - 3 * 3_600_000 };
      const member = `j/s@${new Date(what.askedAt).toISOString()}`;
      const placed = t;
      expect(await b.reserveDestructive(caps, what)).toMatchObject({ ok: true, nodeCount: 1, clusterCount: 1 });
      t += 10_000;
      expect(await b.reserveDestructive(caps, what)).toMatchObject({ ok: true, nodeCount: 1, clusterCount: 1 });
      expect(await redis.zrange(k.destructiveNode('n1'), 0, -1, 'WITHSCORES')).toEqual([member, String(placed)]);
      expect(await redis.zrange(k.destructiveCluster, 0, -1, 'WITHSCORES')).toEqual([member, String(placed)]);
    });

    it('trips the storm breaker when more than M distinct nodes start within the window, and not for repeats of one node', async () => {
      const b = new Breakers(redis, `${prefix}-c`, () => new Date(t));
      expect(await b.recordNodeActivity(caps, 'n1', 'alertmanager')).toBeUndefined();
      expect(await b.recordNodeActivity(caps, 'n1', 'alertmanager')).toBeUndefined();
      expect(await b.recordNodeActivity(caps, 'n2', 'k8s-event')).toBeUndefined();
      const trip = await b.recordNodeActivity(caps, 'n3', 'k8s-event');
      // It names who started the nodes: one sender's flood is that sender's.
      expect(trip).toMatchObject({
        breaker: 'storm',
        count: 3,
        cap: 2,
        why: '3 nodes started recovery jobs within 60 s (more than 2), from k8s-event 2, alertmanager 1: n1, n2, n3',
        sources: { 'k8s-event': 2, alertmanager: 1 },
      });
      const blocked = await b.reserveDestructive(caps, { node: 'n9', jobId: 'x', stepId: 's' });
      expect(blocked).toMatchObject({ ok: false, blockedBy: { breaker: 'storm' } });
      t += 120_000;
      // Nodes outside the window no longer count once reset.
      await b.reset('storm');
      expect(await b.recordNodeActivity(caps, 'n4')).toBeUndefined();
    });

    it("counts a receiver's batch of nodes in one call: the trip names them all, and a batch of one node's repeats is one node", async () => {
      const b = new Breakers(redis, `${prefix}-e`, () => new Date(t));
      const k = controlKeys(`${prefix}-e`);
      expect(await b.recordNodesActivity(caps, [])).toBeUndefined();
      expect(await b.recordNodesActivity(caps, [{ node: 'm1', source: 'npd' }, { node: 'm1', source: 'npd' }, { node: 'm2' }])).toBeUndefined();
      expect(await redis.zrange(k.storm, 0, -1)).toEqual(['m1', 'm2']);
      const trip = await b.recordNodesActivity(caps, [
        { node: 'm3', source: 'alertmanager' },
        { node: 'm4', source: 'alertmanager' },
      ]);
      expect(trip).toMatchObject({
        breaker: 'storm',
        count: 4,
        why: '4 nodes started recovery jobs within 60 s (more than 2), from alertmanager 2, npd 1, unknown 1: m1, m2, m3, m4',
      });
    });
  });
}
