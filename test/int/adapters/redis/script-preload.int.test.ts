import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentScripts } from '../../../../src/adapters/lua/registry.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { NodeRedisUsers } from '../../../../src/adapters/redis/node-redis-users.ts';
import { nodeUserName } from '../../../../src/adapters/redis/node-user-acl.ts';
import { RedisServers } from '../../../../src/adapters/redis/redis-servers.ts';
import { ScriptPreload } from '../../../../src/adapters/redis/script-preload.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { waitFor } from '../../../support/wait.ts';
import { startCluster, startSentinelSet, topologiesAvailable, type LocalCluster, type LocalSentinelSet } from '../../../support/redis-topology.ts';

// The agents' scripts in the script cache of every server of a topology (Redis replicates no
// SCRIPT LOAD, and a restarted server has none), through the same servers and topology watches
// as the per-node users (the receiver shares one RedisServers between them). The single server,
// its restart and the agent's side: test/int/adapters/lua/agent-scripts.int.test.ts.

const skip = topologiesAvailable();
const silent = createLogger('test', 'silent');
const scripts = agentScripts();
const opened: Redis[] = [];

/** How many of the agents' scripts the server on `port` has. */
async function loadedOn(port: number): Promise<number> {
  const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  opened.push(r);
  const present = (await r.call('SCRIPT', 'EXISTS', ...scripts.map((s) => s.sha))) as number[];
  return present.filter((x) => x === 1).length;
}

afterAll(() => {
  for (const r of opened) r.disconnect();
});

describe.skipIf(skip)("the agents' scripts under Sentinel (primary, replica, failover)", () => {
  let set: LocalSentinelSet;
  let servers: RedisServers;
  let preload: ScriptPreload;
  let users: NodeRedisUsers;

  beforeAll(async () => {
    set = await startSentinelSet('vmscripts');
    servers = new RedisServers({
      target: { kind: 'sentinel', sentinels: set.sentinels.map((port) => ({ host: '127.0.0.1', port })), name: set.name },
      connectionName: 'test:every-server',
    });
    preload = new ScriptPreload({ servers, scripts, log: silent, checkMs: 5_000 });
    users = new NodeRedisUsers({ servers, prefix: uniquePrefix('preloadsn'), log: silent });
  }, 60_000);
  afterAll(async () => {
    preload?.close();
    await users?.close();
    servers?.close();
    set?.stop();
  });

  it('loads every script on the primary and the replica, so the replica has them when promoted', async () => {
    const r = await preload.watch();
    expect(r.failed).toEqual([]);
    expect(r.applied.sort()).toEqual([`127.0.0.1:${set.primary.port}`, `127.0.0.1:${set.replica.port}`].sort());
    expect(r.loaded).toBe(2 * scripts.length);
    for (const port of [set.primary.port, set.replica.port]) expect(await loadedOn(port)).toBe(scripts.length);
    // A second check finds them: nothing loaded again.
    expect((await preload.ensure()).loaded).toBe(0);
  });

  it('after a failover the old primary, back with an empty cache, gets them again from the watch; the node users share its servers', async () => {
    const oldPort = set.primary.port;
    await set.primary.crash();
    await waitFor('the sentinels to promote the replica', async () => ((await set.primaryPort()) === set.replica.port ? true : undefined), 20_000);
    await set.restartAsReplica(oldPort);
    // The sentinels' +slave (or the check every 5 s, once they list it) brings it.
    await waitFor('the scripts on the restarted server', async () => ((await loadedOn(oldPort)) === scripts.length ? true : undefined), 60_000);
    const pw = createHash('sha256').update('pw-a').digest('hex');
    const applied = await users.ensure('a', pw);
    expect(applied.applied.sort()).toEqual([`127.0.0.1:${oldPort}`, `127.0.0.1:${set.replica.port}`].sort());
    const asA = new Redis({ port: oldPort, host: '127.0.0.1', username: nodeUserName('a'), password: 'pw-a', maxRetriesPerRequest: 0 });
    asA.on('error', () => {});
    opened.push(asA);
    expect(await asA.ping()).toBe('PONG');
  }, 120_000);
});

describe.skipIf(skip)("the agents' scripts on a Cluster (3 masters, a replica each)", () => {
  let cluster: LocalCluster;
  let servers: RedisServers;
  let preload: ScriptPreload;

  beforeAll(async () => {
    cluster = await startCluster([], { replicas: 1 });
    servers = new RedisServers({ target: { kind: 'cluster', nodes: cluster.nodes }, connectionName: 'test:every-server' });
    preload = new ScriptPreload({ servers, scripts, log: silent, checkMs: 300 });
  }, 60_000);
  afterAll(() => {
    preload?.close();
    servers?.close();
    cluster?.stop();
  });

  it('loads every script on every master and replica, and again on a server that lost them', async () => {
    const all = [...cluster.nodes, ...cluster.replicas];
    expect(all).toHaveLength(6);
    const r = await preload.watch();
    expect(r.failed).toEqual([]);
    expect(r.applied.sort()).toEqual(all.map((n) => `127.0.0.1:${n.port}`).sort());
    for (const n of all) expect(await loadedOn(n.port)).toBe(scripts.length);
    // As a restarted node comes back: an empty cache, noticed by the periodic check.
    const replica = cluster.replicas[0]!;
    const r2 = new Redis({ port: replica.port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    r2.on('error', () => {});
    opened.push(r2);
    await r2.call('SCRIPT', 'FLUSH');
    expect(await loadedOn(replica.port)).toBe(0);
    await waitFor('the scripts back on the replica', async () => ((await loadedOn(replica.port)) === scripts.length ? true : undefined), 10_000);
  }, 60_000);
});
