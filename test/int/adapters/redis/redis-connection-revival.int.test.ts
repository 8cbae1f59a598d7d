import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisConnections } from '../../../../src/adapters/redis/redis-connections.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import type { ResidualMultipathJob } from '../../../../src/core/catalogue/jobs.ts';
import { testSealer } from '../../../support/trust.ts';
import { redisTarget } from '../../../../src/adapters/redis/redis-target.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { freePort } from '../../../../scripts/lib/local-redis.ts';
import { testConfig } from '../../../support/config.ts';
import { getJson } from '../../../testkit/payloads.ts';
import { redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { answers, startSentinelSet, topologiesAvailable, type LocalSentinelSet } from '../../../support/redis-topology.ts';
import { waitFor } from '../../../support/wait.ts';

// A Redis connection that ioredis ended for good is brought back (src/adapters/redis/redis-connections.ts),
// and a process whose connection cannot come back says so on /readyz.

const quiet = { info: () => {}, warn: () => {} };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The id of the client named `name` in CLIENT LIST. */
async function clientId(admin: Redis, name: string): Promise<string | undefined> {
  const list = String(await admin.client('LIST'));
  return list
    .split('\n')
    .find((l) => l.includes(` name=${name} `))
    ?.match(/^id=(\d+)/)?.[1];
}

describe('RedisConnections', () => {
  it('brings back a connection that ended outside close(), and close() ends it for good', async () => {
    const connections = new RedisConnections({ target: redisUrl(), process: 'test', log: quiet });
    cleanups.push(() => connections.close());
    const conn = connections.open('c', 'producer');
    await waitFor('ready', async () => (conn.status === 'ready' ? true : undefined));
    // What ioredis does to a connection it gives up on: status `end`, every command refused.
    const ended = new Promise((r) => conn.once('end', r));
    conn.disconnect();
    await ended;
    await waitFor('the connection back', async () => (connections.states()[0]!.ready ? true : undefined), 5_000);
    expect(await conn.ping()).toBe('PONG');
    expect(connections.states()[0]).toMatchObject({ name: 'c', ready: true, replacements: 1 });
    expect(connections.states()[0]!.endedSince).toBeUndefined();
    // Its name says whose it is.
    expect(await conn.client('GETNAME')).toBe('volume-medic:test:c');
    await connections.close();
    await new Promise((r) => setTimeout(r, 2_500));
    expect(conn.status).toBe('end');
    expect(() => connections.open('d', 'producer')).toThrow(/closing/);
  });
});

describe('the dispatcher on a connection that ended', () => {
  it('stores jobs again once the connection is back, also on a queue first used while it was ended', async () => {
    const connections = new RedisConnections({
      target: redisUrl(),
      process: 'test',
      log: quiet,
      backoff: { baseMs: 1_000, capMs: 1_000 },
      random: () => 0.99,
    });
    cleanups.push(() => connections.close());
    const conn = connections.open('producer', 'producer');
    const prefix = uniquePrefix('revival-dispatch');
    const dispatcher = new Dispatcher(conn, { prefix, timeoutMs: 3_000, sealer: testSealer('receiver') });
    cleanups.push(() => dispatcher.close());
    const job = (key: string, node: string): ResidualMultipathJob => ({
      runbook: 'residual-multipath-cleanup',
      version: 1,
      key,
      target: { node },
      evidence: [{ source: 'api', summary: 'test', raw: null }],
    });
    await waitFor('ready', async () => (conn.status === 'ready' ? true : undefined));
    expect(await dispatcher.enqueue([job('rv_before_0000000001', 'rv-a')])).toHaveLength(1);
    const ended = new Promise((r) => conn.once('end', r));
    conn.disconnect();
    await ended;
    // While it is ended (about a second before it is brought back): a new node's queue is made
    // on it, and its start fails; BullMQ would keep that queue failing for good.
    await expect(dispatcher.enqueue([job('rv_during_000000001', 'rv-b')])).rejects.toThrow();
    await waitFor('the connection back', async () => (conn.status === 'ready' ? true : undefined), 5_000);
    const stored = await dispatcher.enqueue([job('rv_after_00000000001', 'rv-b'), job('rv_after_00000000002', 'rv-a')]);
    expect(stored.map((s) => s.id)).toEqual(['rv_after_00000000001', 'rv_after_00000000002']);
  });
});

describe.skipIf(topologiesAvailable())('a Sentinel failover announced while a reconnect asks a sentinel', () => {
  let set: LocalSentinelSet | undefined;
  afterEach(() => {
    for (const s of set?.sentinelServers ?? []) s.proc.kill('SIGCONT');
    set?.stop();
    set = undefined;
  });

  it('ends the ioredis connection ("Connection is closed.", status end), and the connection is brought back to the new primary', async () => {
    set = await startSentinelSet();
    const s = set;
    const target = redisTarget(testConfig({ redisSentinels: s.env.split(','), redisSentinelName: s.name }));
    // The sentinel first asked is held (SIGSTOP) for as long as the test needs: its answer comes
    // only after the failover was announced, which is the window the race needs.
    const connections = new RedisConnections({ target, process: 'test', log: quiet, connect: { sentinelCommandTimeoutMs: 60_000 } });
    cleanups.push(() => connections.close());
    const conn = connections.open('producer', 'producer');
    const seen: string[] = [];
    for (const ev of ['end', 'ready']) conn.on(ev, () => seen.push(ev));
    await waitFor('ready', async () => (conn.status === 'ready' ? true : undefined));
    // The failover detector subscribes to every sentinel once the connection is up.
    await new Promise((r) => setTimeout(r, 500));
    const asked = s.sentinelServers[0]!;
    asked.proc.kill('SIGSTOP');
    s.primary.kill();
    // Ask a sentinel that answers (primaryPort() would wait on the stopped one).
    const other = new Redis(s.sentinels[1]!, '127.0.0.1', { maxRetriesPerRequest: 1 });
    cleanups.push(() => other.disconnect());
    await waitFor(
      'the replica promoted',
      async () => {
        const addr = (await other.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', s.name)) as [string, string];
        return Number(addr[1]) === s.replica.port ? true : undefined;
      },
      20_000,
    );
    // +switch-master reached the old connection's failover detector, which disconnected the
    // connector in the middle of its sentinel lookup.
    await new Promise((r) => setTimeout(r, 500));
    asked.proc.kill('SIGCONT');
    await waitFor('the connection back', async () => (conn.status === 'ready' ? true : undefined), 15_000);
    expect(seen).toContain('end');
    expect(connections.states()[0]).toMatchObject({ ready: true, replacements: 1, lastError: 'Connection is closed.' });
    // On the new primary, writable.
    expect(await conn.set(`${uniquePrefix('revival')}:k`, '1')).toBe('OK');
    expect(String(await conn.info('server'))).toContain(`tcp_port:${s.replica.port}`);
  }, 60_000);
});

describe('a receiver whose connection cannot come back', () => {
  it('reports not ready on /readyz, naming the connection and why, while /healthz stays ok; ready again once it is back', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'vm-revival-redis-'));
    const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    });
    cleanups.push(() => {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    await waitFor('redis', async () => ((await answers(port)) ? true : undefined));
    const admin = new Redis(port, '127.0.0.1');
    cleanups.push(() => admin.disconnect());
    await admin.call('ACL', 'SETUSER', 'vm-receiver', 'on', '>first-password-0123456789', '~*', '&*', '+@all');
    const r: Receiver = await startReceiver(
      testConfig({
        redisUrl: `redis://127.0.0.1:${port}`,
        redisUsername: 'vm-receiver',
        redisPassword: 'first-password-0123456789',
        queuePrefix: uniquePrefix('revival'),
        tokens: ['revival-test-token-0123456789'],
        redisAckReplicas: 1,
        redisAckTimeoutMs: 200,
      }),
    );
    cleanups.push(() => r.close());
    await waitFor('both connections ready', async () => (r.connections.states().every((c) => c.ready) ? true : undefined));
    expect(await getJson(`${r.url}/readyz`)).toMatchObject({ redis: 'ok', connections: { producer: 'ready', 'replica-ack': 'ready' } });

    // The password is rotated in Redis but not in this process, and the acknowledgement
    // connection is dropped: it reconnects, and AUTH fails every time.
    await admin.call('ACL', 'SETUSER', 'vm-receiver', 'resetpass', '>second-password-0123456789');
    const id = await clientId(admin, 'volume-medic:receiver:replica-ack');
    expect(id).toBeDefined();
    await admin.client('KILL', 'ID', id!);
    const res = await waitFor(
      '/readyz to say not ready',
      async () => {
        const got = await fetch(`${r.url}/readyz`);
        if (got.status !== 503) return undefined;
        const body = (await got.json()) as { status: string; redis: string; connections: Record<string, string> };
        return /WRONGPASS/.test(body.connections['replica-ack'] ?? '') ? body : undefined;
      },
      10_000,
    );
    expect(res.status).toBe('not ready');
    expect(res.connections.producer).toBe('ready');
    expect(res.connections['replica-ack']).toMatch(/^(reconnecting|connecting|connect)\b.*WRONGPASS/);
    expect(res.redis).toMatch(/replica-ack/);
    // Not a reason to restart: ioredis keeps trying (a restart would not fix a wrong password).
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
    const metrics = await (await fetch(`${r.url}/metrics`)).text();
    expect(metrics).toMatch(/volume_medic_redis_connection_ready\{connection="replica-ack"\} 0/);
    expect(metrics).toMatch(/volume_medic_redis_connection_ready\{connection="producer"\} 1/);

    // The old password works again: the connection comes back, and so does readiness.
    await admin.call('ACL', 'SETUSER', 'vm-receiver', '>first-password-0123456789');
    await waitFor('ready again', async () => ((await fetch(`${r.url}/readyz`)).status === 200 ? true : undefined), 10_000);
    const reconnects = r.connections.states().find((c) => c.name === 'replica-ack')!.reconnects;
    expect(reconnects).toBeGreaterThan(0);
  });
});
