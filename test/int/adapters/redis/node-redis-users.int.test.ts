import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { freePort, redisAnswers } from '../../../../scripts/lib/local-redis.ts';
import { finishedExposition, MAX_QUEUE_FIELDS, queueStatsKey, statsKey } from '../../../../src/adapters/stats/job-stats.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import type { Component } from '../../../../src/adapters/kube/rbac.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { NodeRedisUsers } from '../../../../src/adapters/redis/node-redis-users.ts';
import { nodeUserName, nodeUsersKey } from '../../../../src/adapters/redis/node-user-acl.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { startReceiver } from '../../../../src/control/receiver.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { testConfig } from '../../../support/config.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { startCluster, startSentinelSet, topologiesAvailable, type LocalCluster, type LocalSentinelSet } from '../../../support/redis-topology.ts';
import { waitFor } from '../../../support/wait.ts';
import { type AclRedis, startAclRedis } from '../../../support/acl-redis.ts';

// Per-node Redis users (src/adapters/redis/node-redis-users.ts) on real servers of every topology: node
// A's user runs A's real node agent and is refused B's queue and the operator controls; the user
// is on every server (Redis replicates no ACL), survives a failover, reaches a server that joins
// later, and is gone everywhere once removed. Each NOPERM below would pass with the shared
// pattern `vm-node-*`, so each fails if the narrowing is lost.

const silent = createLogger('test', 'silent');
const sha = (pw: string): string => createHash('sha256').update(pw).digest('hex');
const PW = { a: 'pw-node-a-7f3e', ab: 'pw-node-ab-1c9d', b: 'pw-node-b-22aa' } as const;
const skip = topologiesAvailable();
const refused = (what: Promise<unknown>): Promise<void> => expect(what).rejects.toThrow(/NOPERM|can't run this command|can't access|No permissions/);

const opened: Array<Redis | Cluster> = [];
/** A connection as `node`'s user to one server; no reconnect, so a dropped connection stays dropped. */
function as(node: keyof typeof PW, port: number): Redis {
  const r = new Redis({
    host: '127.0.0.1',
    port,
    username: nodeUserName(node),
    password: PW[node],
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  r.on('error', () => {});
  opened.push(r);
  return r;
}
afterAll(() => {
  for (const r of opened) r.disconnect();
});

/** What node A's user may and may not do on the server (or Cluster) `r` reaches. */
async function onlyItsOwnQueue(r: Redis | Cluster, prefix: string): Promise<void> {
  expect(await r.set(`${prefix}:${nodeQueueName('a')}:probe`, '1')).toBe('OK');
  // Braces are literal in Redis' glob: {a} is not {ab}, and `{a}x` is not under `{a}:`.
  await refused(r.set(`${prefix}:${nodeQueueName('ab')}:probe`, '1'));
  await refused(r.set(`${prefix}:vm-node-{a}x`, '1'));
  await refused(r.lpush(`${prefix}:${nodeQueueName('b')}:wait`, 'x'));
  await refused(r.eval("return redis.call('LPUSH', KEYS[1], 'x')", 1, `${prefix}:${nodeQueueName('b')}:wait`));
  // A script that declares its own key but writes B's: Redis checks every command a script runs.
  await refused(r.eval("return redis.call('LPUSH', ARGV[1], 'x')", 1, `${prefix}:${nodeQueueName('a')}:wait`, `${prefix}:${nodeQueueName('b')}:wait`));
  // The operator controls: read, never written.
  expect(await r.hget(`${prefix}:vm:ctl:modes`, 'runbook/x')).toBeNull();
  await refused(r.hset(`${prefix}:vm:ctl:modes`, 'runbook/x', '{"mode":"enforce"}'));
  await refused(r.hdel(`${prefix}:vm:ctl:pause`, 'cluster'));
  // B's approval requests and decisions, parked jobs and audit list; the fleet audit list, the
  // old shared approval, parked and audit keys, and the queue registry.
  const b = queueControlKeys(prefix, nodeQueueName('b'));
  await refused(r.set(b.approval('j1'), '{"state":"approved"}'));
  await refused(r.hset(b.parked, 'j1', '{}'));
  await refused(r.del(b.audit));
  await refused(r.lpush(controlKeys(prefix).audit, '{}'));
  await refused(r.set(`${prefix}:vm:ctl:approval:j1`, '{}'));
  await refused(r.hset(`${prefix}:vm:ctl:parked`, 'j1', '{}'));
  await refused(r.srem(knownQueuesKey(prefix), nodeQueueName('b')));
  // The breakers (trip the storm or cluster breaker for the fleet, or clear one): no.
  const ck = controlKeys(prefix);
  await refused(r.hset(ck.tripped, 'storm', '{}'));
  await refused(r.hdel(ck.tripped, 'cluster'));
  await refused(r.zadd(ck.storm, Date.now(), 'made-up-node'));
  await refused(r.del(ck.destructiveCluster));
  // The fleet's job statistics and B's: no. Its own: yes.
  await refused(r.hset(statsKey(prefix), 'ran|x|failed|1', '0'));
  await refused(r.hincrby(queueStatsKey(prefix, nodeQueueName('b')), 'ran|x|failed|1', -5));
  const a = queueControlKeys(prefix, nodeQueueName('a'));
  expect(await r.lpush(a.audit, '{}')).toBeGreaterThan(0);
  expect(await r.hincrby(queueStatsKey(prefix, nodeQueueName('a')), 'ran|x|failed|1', 1)).toBeGreaterThan(0);
  // Nor the registry of users, nor ACL.
  await refused(r.hgetall(nodeUsersKey(prefix)));
  await refused(r.call('ACL', 'SETUSER', nodeUserName('b'), 'on', '>x'));
}

describe.skipIf(skip)("per-node Redis users on a single server (the deploy ACL file, the receiver's own user)", () => {
  const prefix = uniquePrefix('nodeacl');
  const passwords: Record<Component, string> = {
    receiver: 'pw-receiver-4411',
    'cluster-worker': 'pw-cluster-4412',
    'node-agent': 'pw-agent-4413',
  };
  let redis: AclRedis;
  let port: number;
  let admin: Redis;
  let users: NodeRedisUsers;
  const receiverUrl = (): string => `redis://${REDIS_USERS.receiver}:${passwords.receiver}@127.0.0.1:${port}`;

  beforeAll(async () => {
    // Test-only: an admin user after the deploy file's lines, to read ACL LOG and play a restart.
    redis = await startAclRedis({ acl: renderRedisAcl({ prefix, passwords }), name: 'vm-node-acl' });
    port = redis.port;
    admin = new Redis(redis.adminUrl);
    // The receiver's user from the deploy file: its ACL grants are what this runs on.
    users = new NodeRedisUsers({ target: { kind: 'single', url: receiverUrl() }, prefix, log: silent });
  });
  afterAll(async () => {
    await users?.close();
    admin?.disconnect();
    await redis?.stop();
  });

  it("creates each node's user from concurrent calls (one batch), registers only hashes, and refuses A everything of B and the controls", async () => {
    const reports = await Promise.all((['a', 'ab', 'b'] as const).map((n) => users.ensure(n, sha(PW[n]))));
    for (const r of reports) expect(r).toEqual({ applied: [`127.0.0.1:${port}`], failed: [] });
    const registry = await admin.hgetall(nodeUsersKey(prefix));
    expect(registry).toEqual({ a: sha(PW.a), ab: sha(PW.ab), b: sha(PW.b) });
    expect(JSON.stringify(registry)).not.toContain(PW.a);
    await onlyItsOwnQueue(as('a', port), prefix);
    await expect(as('a', port).auth(nodeUserName('b'), PW.a)).rejects.toThrow(/WRONGPASS/);
  });

  it("runs node A's real node agent on A's queue under A's user, with no command refused", async () => {
    await admin.acl('LOG', 'RESET');
    const receiver = await startReceiver(testConfig({ redisUrl: receiverUrl(), queuePrefix: prefix, operatorAuth: 'insecure' }));
    const agent = createNodeAgent({
      // ENROL_URL: its breaker slots are taken by the receiver (its own user may not write them).
      config: testConfig({
        redisUrl: `redis://${nodeUserName('a')}:${PW.a}@127.0.0.1:${port}`,
        queuePrefix: prefix,
        nodeName: 'a',
        defaultMode: 'enforce',
        approvalHighRisk: false,
        stateDir: join(redis.dir, 'agent'),
        enrolUrl: receiver.url,
      }),
      log: silent,
      registry: { 'residual-multipath-cleanup': async (_job, ctx) => destructiveStep(ctx) },
    });
    try {
      const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('a', 'resolved')]));
      expect(r.status).toBe(202);
      const id: string = r.json.accepted[0].id;
      expect(
        await waitFor(`job ${id}`, async () => {
          const j = await getJson(`${receiver.url}/v1/jobs/${encodeURIComponent(id)}`);
          return j.state === 'completed' || j.state === 'failed' ? `${j.state}${j.failedReason ? `: ${j.failedReason}` : ''}` : undefined;
        }),
      ).toBe('completed');
    } finally {
      await agent.close();
      await receiver.close();
    }
    const log = (await admin.acl('LOG', '128')) as unknown[][];
    expect(log.map((e) => e.map(String).join(' ')).filter((e) => e.includes('volume-medic-node.'))).toEqual([]);
    // Its destructive step took its slot through the receiver, and its start counted towards the storm.
    expect(await admin.zcard(controlKeys(prefix).destructiveNode('a'))).toBe(1);
    expect(await admin.zcard(controlKeys(prefix).destructiveCluster)).toBe(1);
    expect(await admin.zscore(controlKeys(prefix).storm, 'a')).not.toBeNull();
    // Its job counted under its own queue, and in the fleet's total.
    expect(await admin.hgetall(queueStatsKey(prefix, nodeQueueName('a')))).toMatchObject({
      'summs|residual-multipath-cleanup': expect.any(String),
    });
    expect(await finishedExposition(admin, prefix)).toMatch(/volume_medic_jobs_finished_total\{runbook="residual-multipath-cleanup",outcome="succeeded"\} 1\n/);
  });

  it("A may skew its own statistics up, never the fleet's down: a count below 0 or not a number adds nothing", async () => {
    const field = 'ran|rbd-unmap|failed|1';
    await admin.hset(statsKey(prefix), field, '5');
    await admin.sadd(knownQueuesKey(prefix), nodeQueueName('a'), nodeQueueName('b'));
    await admin.hset(queueStatsKey(prefix, nodeQueueName('b')), field, '3');
    const asA = as('a', port);
    await asA.hset(queueStatsKey(prefix, nodeQueueName('a')), field, '-1000', 'ran|rbd-unmap|succeeded|1', 'lots');
    const text = await finishedExposition(admin, prefix);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="rbd-unmap",outcome="failed"\} 8\n/);
    expect(text).not.toMatch(/outcome="succeeded"\} (NaN|lots)/);
  });

  it("nor drown the fleet's counts: a huge count adds nothing, a padded hash is left unread and counted", async () => {
    const field = 'ran|drowned|failed|1';
    await admin.sadd(knownQueuesKey(prefix), nodeQueueName('a'), nodeQueueName('b'));
    await admin.hset(queueStatsKey(prefix, nodeQueueName('b')), field, '3');
    const asA = as('a', port);
    await asA.hset(queueStatsKey(prefix, nodeQueueName('a')), field, '999999999999999999999');
    let text = await finishedExposition(admin, prefix);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="drowned",outcome="failed"\} 3\n/);
    expect(text).toMatch(/volume_medic_job_stats_unread_queues 0\n/);
    const padding = Array.from({ length: MAX_QUEUE_FIELDS + 1 }, (_, i) => [`ran|pad-${i}|failed|1`, '1']).flat();
    await asA.hset(queueStatsKey(prefix, nodeQueueName('a')), ...padding);
    text = await finishedExposition(admin, prefix);
    expect(text).not.toMatch(/pad-/);
    expect(text).toMatch(/volume_medic_jobs_finished_total\{runbook="drowned",outcome="failed"\} 3\n/);
    expect(text).toMatch(/volume_medic_job_stats_unread_queues 1\n/);
  });

  it('redefines a user in place: a live connection of it keeps working, a new password replaces the old', async () => {
    const live = as('a', port);
    expect(await live.ping()).toBe('PONG');
    await users.ensure('a', sha(PW.a));
    expect(await live.ping()).toBe('PONG');
    await users.ensure('a', sha('rotated'));
    await expect(as('a', port).ping()).rejects.toThrow(/WRONGPASS/);
    await users.ensure('a', sha(PW.a));
    expect(await as('a', port).ping()).toBe('PONG');
  });

  it('reconcile() brings back a user a restart lost and deletes one the registry no longer has', async () => {
    await admin.call('ACL', 'DELUSER', nodeUserName('ab')); // as a restarted server with only its file
    await admin.call('ACL', 'SETUSER', nodeUserName('ghost'), 'on', '>x', '~*', '+@all'); // missed a removal
    const r = await users.reconcile();
    expect(r.failed).toEqual([]);
    expect(await as('ab', port).ping()).toBe('PONG');
    expect(await admin.call('ACL', 'GETUSER', nodeUserName('ghost'))).toBeNull();
    // Users that are not the module's are left alone.
    expect(await admin.call('ACL', 'GETUSER', REDIS_USERS['node-agent'])).not.toBeNull();
  });

  it('watch() reconciles on its own every reconcileMs: a user the server lost comes back without a call', async () => {
    const watching = new NodeRedisUsers({ target: { kind: 'single', url: receiverUrl() }, prefix, log: silent, reconcileMs: 200 });
    try {
      watching.watch();
      await admin.call('ACL', 'DELUSER', nodeUserName('ab'));
      await waitFor(
        "node ab's user back",
        async () =>
          (await as('ab', port)
            .ping()
            .catch(() => undefined)) ?? undefined,
        5_000,
      );
    } finally {
      await watching.close();
    }
  });

  it("watch() applies every user again when it starts: a user made with an earlier release's wider rules gets this release's", async () => {
    await admin.call('ACL', 'SETUSER', nodeUserName('ab'), 'reset', 'on', `#${sha(PW.ab)}`, '~*', '+@all'); // as an old release left it
    expect(await as('ab', port).hset(statsKey(prefix), 'x', '1')).toBe(1);
    const watching = new NodeRedisUsers({
      target: { kind: 'single', url: receiverUrl() },
      prefix,
      log: silent,
      reconcileMs: 600_000,
      settleMs: 50,
    });
    try {
      watching.watch();
      await waitFor(
        "node ab's old rules replaced",
        () =>
          as('ab', port)
            .hset(statsKey(prefix), 'x', '2')
            .then(
              () => undefined,
              (e: Error) => (/NOPERM/.test(e.message) ? true : undefined),
            ),
        5_000,
      );
      expect(await as('ab', port).ping()).toBe('PONG');
    } finally {
      await watching.close();
    }
  });

  it('remove() deletes the user: a new AUTH fails, a live connection is closed, the registry forgets it', async () => {
    const live = as('b', port);
    expect(await live.ping()).toBe('PONG');
    expect(await users.remove('b')).toEqual({ applied: [`127.0.0.1:${port}`], failed: [] });
    await expect(as('b', port).ping()).rejects.toThrow(/WRONGPASS/);
    await expect(live.ping()).rejects.toThrow();
    expect(await admin.hexists(nodeUsersKey(prefix), 'b')).toBe(0);
  });

  it('refuses bad input before it reaches Redis, and names the server without the password when it fails', async () => {
    await expect(users.ensure('a*', sha('x'))).rejects.toThrow(/node name/);
    const deadPort = await freePort();
    const dead = new NodeRedisUsers({
      target: { kind: 'single', url: `redis://u:secret-pw@127.0.0.1:${deadPort}` },
      prefix,
      log: silent,
      timeoutMs: 300,
    });
    try {
      const err = await dead.ensure('a', sha(PW.a)).catch((e: Error) => e);
      expect(String(err)).toMatch(new RegExp(`127\\.0\\.0\\.1:${deadPort}|the registry`));
      expect(String(err)).not.toMatch(/secret-pw|[0-9a-f]{64}/);
    } finally {
      await dead.close();
    }
  });
});

describe.skipIf(skip)('per-node Redis users under Sentinel (primary, replica, failover)', () => {
  const prefix = uniquePrefix('nodeaclsn');
  let set: LocalSentinelSet;
  let users: NodeRedisUsers;
  // What the module logged, and what each sentinel says now: a timed-out wait below says why.
  const logged: string[] = [];
  const captured = createLogger('test', 'info', { destination: { write: (line: string) => void logged.push(line.trim()) } });
  const sentinelsView = async (): Promise<string> => {
    const views = await Promise.all(
      set.env.split(',').map(async (s) => {
        const r = new Redis({ host: '127.0.0.1', port: Number(s.split(':')[1]), maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
        r.on('error', () => {});
        try {
          const replicas = (await r.call('SENTINEL', 'REPLICAS', set.name)) as string[][];
          return `${s}: ${replicas.map((f) => `${f[f.indexOf('name') + 1]} ${f[f.indexOf('flags') + 1]}`).join('; ')}`;
        } catch (e) {
          return `${s}: ${(e as Error).message}`;
        } finally {
          r.disconnect();
        }
      }),
    );
    return views.join('\n');
  };
  const explained = async <T>(what: Promise<T>): Promise<T> => {
    try {
      return await what;
    } catch (e) {
      throw new Error(`${(e as Error).message}\nsentinels:\n${await sentinelsView()}\nlogged:\n${logged.join('\n')}`);
    }
  };

  beforeAll(async () => {
    set = await startSentinelSet('vmacl');
    users = new NodeRedisUsers({
      target: {
        kind: 'sentinel',
        sentinels: set.env.split(',').map((s) => ({ host: '127.0.0.1', port: Number(s.split(':')[1]) })),
        name: set.name,
      },
      prefix,
      log: captured,
      settleMs: 200,
      reconcileMs: 5_000,
    });
  }, 60_000);
  afterAll(async () => {
    await users?.close();
    set?.stop();
  });

  it('applies the user on the primary and the replica, so the replica already has it when promoted', async () => {
    const [ra, rb] = await Promise.all([users.ensure('a', sha(PW.a)), users.ensure('b', sha(PW.b))]);
    expect(ra.failed).toEqual([]);
    expect(ra.applied.sort()).toEqual([`127.0.0.1:${set.primary.port}`, `127.0.0.1:${set.replica.port}`].sort());
    expect({ ...rb, applied: [...rb.applied].sort() }).toEqual(ra);
    expect(await as('a', set.replica.port).ping()).toBe('PONG');
    await onlyItsOwnQueue(as('a', set.primary.port), prefix);
  });

  it("after the primary dies: A authenticates on the new primary and is still refused B's queue; the old primary, back as a replica, gets the users again from the watch", async () => {
    users.watch();
    const oldPort = set.primary.port;
    await set.primary.crash();
    await waitFor('the sentinels to promote the replica', async () => ((await set.primaryPort()) === set.replica.port ? true : undefined), 20_000);
    await onlyItsOwnQueue(as('a', set.replica.port), prefix);
    // Enrolment goes on while the old primary is away: applied where it can be, the rest reported.
    const during = await users.ensure('ab', sha(PW.ab));
    // (Right after the promotion a sentinel may not list the old primary yet: reported or not, the watch brings it.)
    expect(during.applied).toEqual([`127.0.0.1:${set.replica.port}`]);
    for (const f of during.failed) expect(f.server).toBe(`127.0.0.1:${oldPort}`);
    // A fresh server (its ACLs were in memory only): nothing but the default user.
    await set.restartAsReplica(oldPort);
    // The sentinels' +slave event brings it at once; on a loaded machine their notice of the
    // restarted server can come late (they read the primary's replica list every 10 s), and the
    // watch's reconcile (every 5 s here) brings it once they list it.
    await explained(
      waitFor(
        "node A's user on the restarted server",
        async () =>
          (await as('a', oldPort)
            .ping()
            .catch(() => undefined)) ?? undefined,
        60_000,
      ),
    );
    expect(await as('b', oldPort).ping()).toBe('PONG');
    expect(await as('ab', oldPort).ping()).toBe('PONG');
    // reapplyAll() reaches both, the registry having come from the new primary.
    const r = await users.reapplyAll();
    expect(r.failed).toEqual([]);
    expect(r.applied.sort()).toEqual([`127.0.0.1:${oldPort}`, `127.0.0.1:${set.replica.port}`].sort());
  }, 120_000);

  it('remove() deletes the user on the primary and the replica', async () => {
    for (const port of [set.primary.port, set.replica.port]) expect(await as('a', port).ping()).toBe('PONG');
    const r = await users.remove('a');
    expect(r.failed).toEqual([]);
    expect(r.applied).toHaveLength(2);
    for (const port of [set.primary.port, set.replica.port]) await expect(as('a', port).ping()).rejects.toThrow(/WRONGPASS/);
  });
});

describe.skipIf(skip)('per-node Redis users on a Cluster (3 masters, a replica each)', () => {
  const prefix = uniquePrefix('nodeaclcl');
  let cluster: LocalCluster;
  let users: NodeRedisUsers;

  beforeAll(async () => {
    cluster = await startCluster([], { replicas: 1 });
    users = new NodeRedisUsers({ target: { kind: 'cluster', nodes: cluster.nodes }, prefix, log: silent });
  }, 60_000);
  afterAll(async () => {
    await users?.close();
    cluster?.stop();
  });

  it("applies the user on every master and replica; A is refused B's queue on whichever master holds it", async () => {
    const [ra] = await Promise.all([users.ensure('a', sha(PW.a)), users.ensure('b', sha(PW.b)), users.ensure('ab', sha(PW.ab))]);
    expect(ra!.failed).toEqual([]);
    const servers = [...cluster.nodes, ...cluster.replicas];
    expect(servers).toHaveLength(6);
    expect(ra!.applied.sort()).toEqual(servers.map((n) => `127.0.0.1:${n.port}`).sort());
    for (const n of servers) expect(await as('a', n.port).ping()).toBe('PONG');
    const c = new Cluster(cluster.nodes, { redisOptions: { username: nodeUserName('a'), password: PW.a, maxRetriesPerRequest: 0 } });
    c.on('error', () => {});
    opened.push(c);
    await onlyItsOwnQueue(c, prefix);
  });

  it('watch(): a replica that joins the Cluster later gets every user', async () => {
    const watching = new NodeRedisUsers({
      target: { kind: 'cluster', nodes: cluster.nodes },
      prefix,
      log: silent,
      settleMs: 100,
      reconcileMs: 600_000,
      clusterRefreshMs: 1_000,
    });
    const port = await freePort();
    const busPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'vm-node-acl-cl-'));
    const proc = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-port',
        String(busPort),
        '--cluster-node-timeout',
        '2000',
      ],
      { stdio: 'ignore' },
    );
    try {
      watching.watch();
      await watching.reconcile(); // the client is up and watching before the node joins
      for (let i = 0; i < 100 && !(await redisAnswers(`redis://127.0.0.1:${port}`)); i++) await new Promise((r) => setTimeout(r, 50));
      const add = spawnSync('redis-cli', ['--cluster', 'add-node', `127.0.0.1:${port}`, `127.0.0.1:${cluster.nodes[0]!.port}`, '--cluster-slave'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(add.status, add.stdout + add.stderr).toBe(0);
      // ioredis refreshes its slot map every 5 s by default; the new replica joins its pool then.
      await waitFor(
        "node A's user on the new replica",
        async () =>
          (await as('a', port)
            .ping()
            .catch(() => undefined)) ?? undefined,
        30_000,
      );
      expect(await as('b', port).ping()).toBe('PONG');
    } finally {
      await watching.close();
      // Out of the Cluster again (every node forgets it), so the next test has the six it started with.
      const id = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'myid'], { encoding: 'utf8' }).stdout.trim();
      if (id) spawnSync('redis-cli', ['--cluster', 'del-node', `127.0.0.1:${cluster.nodes[0]!.port}`, id], { encoding: 'utf8', timeout: 30_000 });
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('remove() deletes the user on every master and replica', async () => {
    const servers = [...cluster.nodes, ...cluster.replicas];
    for (const n of servers) expect(await as('a', n.port).ping()).toBe('PONG');
    const r = await users.remove('a');
    expect(r.failed).toEqual([]);
    for (const n of servers) await expect(as('a', n.port).ping()).rejects.toThrow(/WRONGPASS/);
  });
});

async function destructiveStep(
  ctx: Parameters<NonNullable<import('../../../../workers/engine/registry.ts').RunbookRegistry['rbd-unmap']>>[1],
): Promise<RunbookResult> {
  const runbook: RemediationJob['runbook'] = 'residual-multipath-cleanup';
  const s = {
    id: 'nodeacl:step',
    description: 'node acl test step',
    destructive: true,
    evidence: [{ claim: 'test', source: 'test', observedAt: new Date().toISOString(), status: 'holds' as const }],
  };
  const decision = await ctx.gate?.beforeStep(s, { summary: 'node acl test', steps: [s] });
  if (decision && !decision.go) throw new Error(`parked: ${decision.park.why}`);
  await ctx.audit?.('destructive-step', `job/${ctx.jobId}/${s.id}`, 'node acl test');
  return {
    runbook,
    mode: 'enforce',
    outcome: 'succeeded',
    summary: 'node acl test',
    facts: {},
    plan: {},
    refusals: [],
    steps: [],
    commands: [],
    ranOn: ctx.ranOn,
  };
}
