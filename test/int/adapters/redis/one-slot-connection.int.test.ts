import { spawnSync } from 'node:child_process';
import { Queue, Worker } from 'bullmq';
import keySlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, whenReady, type RedisConnection } from '../../../../src/adapters/redis/redis.ts';
import { startCluster, topologiesAvailable, type LocalCluster } from '../../../support/redis-topology.ts';
import { dropPrefixOn, uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';

// A node agent's connection on a Redis Cluster (ConnectOptions.oneSlot, src/adapters/redis/slot-connector.ts):
// one socket to the master of its queue's slot and to no other node, BullMQ working over it (its
// blocking duplicate too), a key of another slot refused rather than followed, and after a
// failover the same client on the new master.

const skip = topologiesAvailable();

describe.skipIf(skip)('a connection to one slot of a Redis Cluster', () => {
  let cluster: LocalCluster;
  let admin: Cluster;
  const prefix = uniquePrefix('oneslot');
  const queue = 'vm-node-{slot-a}';
  const opened: RedisConnection[] = [];
  const servers = () => [...cluster.nodes, ...cluster.replicas].map((n) => new Redis(n.port, n.host));
  /** How many of the clients named `name` each server holds, by port. */
  const holders = async (name: string): Promise<Record<number, number>> => {
    const out: Record<number, number> = {};
    for (const r of servers()) {
      const names = [...String(await r.client('LIST')).matchAll(/ name=(\S*) /g)].map((m) => m[1]);
      const n = names.filter((x) => x === name).length;
      if (n > 0) out[r.options.port!] = n;
      r.disconnect();
    }
    return out;
  };
  /** The port of the master serving `slot` now, from CLUSTER SLOTS. */
  const masterOf = async (slot: number): Promise<number> => {
    const rows = (await admin.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    return rows.find(([a, b]) => slot >= a && slot <= b)![2][1];
  };
  const open = (name: string): RedisConnection => {
    const c = connect({ kind: 'cluster', nodes: cluster.nodes }, 'worker', { oneSlot: { key: queue }, connectionName: name });
    c.on('error', () => {});
    opened.push(c);
    return c;
  };

  beforeAll(async () => {
    cluster = await startCluster([], { replicas: 1 });
    admin = new Cluster(cluster.nodes);
  }, 60_000);
  afterAll(async () => {
    for (const c of opened) c.disconnect();
    if (admin) {
      await dropPrefixOn(admin, prefix);
      admin.disconnect();
    }
    cluster?.stop();
  });

  it('computes the slot of a key as Redis does', async () => {
    for (const key of [queue, 'vm-node-{a}', 'plain', '{}', 'x{}y', '{a}{b}', 'a{', 'über-{knoten}', `${prefix}:vm-node-{n1}:vm:controls`])
      expect(keySlot(key)).toBe(await admin.cluster('KEYSLOT', key));
  });

  it("holds one connection, to its slot's master only, and refuses a key of another slot", async () => {
    const c = open('vmtest-oneslot-a');
    await whenReady(c, 10_000);
    await c.set(`${prefix}:${queue}:x`, '1');
    expect(await c.get(`${prefix}:${queue}:x`)).toBe('1');
    const other = `${prefix}:vm-node-{elsewhere-1}:x`;
    expect(keySlot(other)).not.toBe(keySlot(queue));
    // Only the slot's master holds it, whoever else's slot a key names: no connection follows MOVED.
    await expect(c.get(other)).rejects.toThrow(/^MOVED /);
    expect(await c.get(`${prefix}:${queue}:x`)).toBe('1');
    expect(await holders('vmtest-oneslot-a')).toEqual({ [await masterOf(keySlot(queue))]: 1 });
  });

  it('carries a BullMQ worker, its blocking duplicate on the same master', async () => {
    const c = open('vmtest-oneslot-worker');
    const done: string[] = [];
    const worker = new Worker(queue, async (job) => void done.push(job.id!), { connection: c, prefix, skipVersionCheck: true, drainDelay: 1 });
    worker.on('error', () => {});
    const q = new Queue(queue, { connection: admin, prefix });
    try {
      await q.add('t', {}, { jobId: 'one' });
      await waitFor('the job ran', async () => (done.includes('one') ? true : undefined), 15_000);
      const master = await masterOf(keySlot(queue));
      expect(await holders('vmtest-oneslot-worker')).toEqual({ [master]: 1 });
      expect(await holders(`${prefix}:${Buffer.from(queue).toString('base64')}`)).toEqual({ [master]: 1 });
    } finally {
      await worker.close();
      await q.close();
    }
  });

  it('finds the new master after a failover and goes on there', async () => {
    const c = open('vmtest-oneslot-failover');
    await whenReady(c, 10_000);
    await c.set(`${prefix}:${queue}:f`, 'before');
    const old = await masterOf(keySlot(queue));
    const replica = cluster.replicas.find(
      (r) => /master_port:(\d+)/.exec(spawnSync('redis-cli', ['-p', String(r.port), 'info', 'replication']).stdout.toString())?.[1] === String(old),
    )!;
    expect(replica).toBeDefined();
    expect(spawnSync('redis-cli', ['-p', String(replica.port), 'cluster', 'failover']).stdout.toString()).toMatch(/OK/);
    await waitFor('the replica took over the slot', async () => ((await masterOf(keySlot(queue))) === replica.port ? true : undefined), 30_000);
    // The old master now answers MOVED for the slot: the client goes to the new one and the write lands there.
    await waitFor(
      'a write through the same client succeeds',
      async () => ((await c.set(`${prefix}:${queue}:f`, 'after').catch(() => undefined)) === 'OK' ? true : undefined),
      30_000,
    );
    expect(await admin.get(`${prefix}:${queue}:f`)).toBe('after');
    expect(await holders('vmtest-oneslot-failover')).toEqual({ [replica.port]: 1 });
  }, 90_000);
});
