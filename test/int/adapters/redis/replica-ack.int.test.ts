import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onlineReplicas, ReplicaAck } from '../../../../src/adapters/redis/replica-ack.ts';
import { startPrivateRedis, type PrivateRedis } from '../../../support/redis-server.ts';
import { waitFor } from '../../../support/wait.ts';

// The receiver's 202 waits for every replica the primary lists online, never fewer than
// REDIS_ACK_REPLICAS: a failover may promote any of them, so a job only some of them hold can be
// the one it drops. A primary and two replicas, each a real redis-server on loopback; a replica
// is held back with SIGSTOP (it stays connected and online for the primary, as a slow or
// stalled replica does) or taken away.

let primary: PrivateRedis;
let replicas: PrivateRedis[];
let admin: Redis;
const clients: Redis[] = [];
const connect = (url: string): Redis => {
  const c = new Redis(url, { maxRetriesPerRequest: 1 });
  c.on('error', () => {});
  clients.push(c);
  return c;
};

beforeAll(async () => {
  primary = await startPrivateRedis();
  replicas = await Promise.all([0, 1].map(() => startPrivateRedis()));
  admin = connect(primary.url);
  for (const r of replicas) await connect(r.url).replicaof('127.0.0.1', primary.port);
  await waitFor('two replicas online', async () => (onlineReplicas(await admin.info('replication')) === 2 ? true : undefined));
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all([primary, ...replicas].map((r) => r?.destroy()));
});

describe('ReplicaAck', () => {
  it('reads the online replicas from INFO replication', () => {
    const info = [
      '# Replication',
      'role:master',
      'connected_slaves:3',
      'slave0:ip=127.0.0.1,port=1,state=online,offset=10,lag=0',
      'slave1:ip=127.0.0.1,port=2,state=wait_bgsave,offset=0,lag=0',
      'slave2:ip=127.0.0.1,port=3,state=online,offset=10,lag=1',
    ].join('\r\n');
    expect(onlineReplicas(info)).toBe(2);
    expect(onlineReplicas('# Replication\r\nrole:master\r\nconnected_slaves:0\r\n')).toBe(0);
  });

  it('asks every online replica, though REDIS_ACK_REPLICAS says one: both acknowledge', async () => {
    const ack = new ReplicaAck(connect(primary.url), { replicas: 1, timeoutMs: 2_000, markerKey: 'vm-ack-test:a' });
    await ack.confirm();
    expect(ack.status()).toMatchObject({ ok: true, required: 2, acknowledged: 2 });
  });

  it('refuses while one of the two online replicas lags behind, though the other acknowledged (WAIT 1 would have answered 202)', async () => {
    const ack = new ReplicaAck(connect(primary.url), { replicas: 1, timeoutMs: 500, markerKey: 'vm-ack-test:b' });
    await ack.confirm();
    const pid = replicas[1]!.pid()!;
    process.kill(pid, 'SIGSTOP');
    try {
      await expect(ack.confirm()).rejects.toThrow(/1 of 2 replica\(s\) acknowledged/);
      expect(ack.status()).toMatchObject({ ok: false, required: 2, acknowledged: 1 });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await ack.confirm();
    expect(ack.status()).toMatchObject({ ok: true, required: 2 });
  });

  it('asks only the replicas still online once one is gone, never fewer than REDIS_ACK_REPLICAS', async () => {
    const ack = new ReplicaAck(connect(primary.url), { replicas: 1, timeoutMs: 500, markerKey: 'vm-ack-test:c' });
    await ack.confirm();
    await replicas[1]!.stop();
    await waitFor('one replica online', async () => (onlineReplicas(await admin.info('replication')) === 1 ? true : undefined), 90_000);
    // The round after the loss may still ask for two (the count is from the round before): then it answers once INFO says one.
    await ack.confirm().catch(() => undefined);
    await ack.confirm();
    expect(ack.status()).toMatchObject({ ok: true, required: 1, acknowledged: 1 });
    const strict = new ReplicaAck(connect(primary.url), { replicas: 2, timeoutMs: 300, markerKey: 'vm-ack-test:d' });
    await expect(strict.confirm()).rejects.toThrow(/of 2 replica/);
  });
});
