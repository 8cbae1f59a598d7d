import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../scripts/deploy/redis-acl.ts';
import { freePort } from '../../../scripts/lib/local-redis.ts';
import { incidentIndexKey } from '../../../src/adapters/jobstore/incident-index.ts';
import type { RbdUnmapJob, RemediationJob } from '../../../src/core/catalogue/jobs.ts';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../../../src/core/catalogue/result.ts';
import type { Component } from '../../../src/adapters/kube/rbac.ts';
import { createLogger } from '../../../src/adapters/observability/logger.ts';
import { agentRuns, readAgentRuns, writeAgentRuns } from '../../../src/adapters/jobstore/agent-runs.ts';
import { Dispatcher } from '../../../src/adapters/jobstore/dispatcher.ts';
import { IncidentIndex } from '../../../src/adapters/jobstore/incident-index.ts';
import { producerConnection, whenReady, workerConnection } from '../../../src/adapters/redis/redis.ts';
import { NoAgentWatch } from '../../../workers/cluster-worker/no-agent-watch.ts';
import { redisTarget } from '../../../src/adapters/redis/redis-target.ts';
import { loadConfig } from '../../../src/core/config/load.ts';
import { startReceiver, type Receiver } from '../../../src/control/receiver.ts';
import { createRunbookWorker } from '../../../workers/engine/runbook-worker.ts';
import { AgentStore } from '../../../src/adapters/jobstore/agent-store.ts';
import { trustFromConfig } from '../../../src/core/trust/from-config.ts';
import { controlsFromConfig } from '../../../workers/engine/job-controls.ts';
import { seenWork } from '../../../workers/engine/seen-work.ts';
import { createNodeAgent } from '../../../workers/node-agent/agent.ts';
import { testConfig } from '../../support/config.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../testkit/payloads.ts';
import { uniquePrefix } from '../../support/redis.ts';
import { testSealer } from '../../support/trust.ts';
import { waitFor } from '../../support/wait.ts';
import { type AclRedis, startAclRedis } from '../../support/acl-redis.ts';
import { redisTlsFiles } from '../../support/redis-tls-files.ts';

// The bundled Redis's ACL file (deploy/charts/volume-medic/files/users.acl.template, rendered for this
// test's prefix) on a real redis-server: each process's REAL code (receiver, cluster worker, node
// agent) does its whole job with its own user, a job travelling receiver -> cluster worker -> node
// agent; Redis' ACL LOG must show no command refused on the way (a refusal swallowed by a catch
// would show up there). And what the users must not do is refused: FLUSHALL, CONFIG, KEYS, keys
// outside the prefix (also from a script), SCRIPT FLUSH, blocking pops for the receiver; a
// connection without a password can do nothing.

const prefix = uniquePrefix('acl');
const passwords: Record<Component, string> = {
  receiver: 'pw-receiver-0d1e',
  'cluster-worker': 'pw-cluster-5a7c',
  'node-agent': 'pw-agent-93b2',
};
// Test-only: one admin user appended after the deploy file's lines, to read ACL LOG.
const silent = createLogger('test', 'silent');

let dir: string;
let redis: AclRedis | undefined;
let port: number;
let tlsPort: number | undefined;
let admin: Redis;
const url = (c: Component, scheme = 'redis', p = port, host = '127.0.0.1'): string => `${scheme}://${REDIS_USERS[c]}:${passwords[c]}@${host}:${p}`;
const connections: Redis[] = [];
const connect = (u: string): Redis => {
  const r = new Redis(u, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  r.on('error', () => {});
  connections.push(r);
  return r;
};

beforeAll(async () => {
  const wantTlsPort = await freePort();
  redis = await startAclRedis({
    acl: renderRedisAcl({ prefix, passwords }),
    name: 'vm-redis-acl',
    // TLS beside plain TCP where openssl can make a CA and a certificate (in the server's directory).
    args: (serverDir) => {
      const tls = redisTlsFiles(serverDir);
      if (!tls) return [];
      tlsPort = wantTlsPort;
      return ['--tls-port', String(tlsPort), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no'];
    },
  });
  ({ dir, port } = redis);
  admin = new Redis(redis.adminUrl);
  await admin.acl('LOG', 'RESET');
});

afterAll(async () => {
  for (const c of connections) c.disconnect();
  admin?.disconnect();
  await redis?.stop();
});

/** ACL LOG entries (refusals) for volume-medic's users since the last reset. */
async function refusals(): Promise<string[]> {
  const log = (await admin.acl('LOG', '128')) as unknown[][];
  return log
    .map((entry) => {
      const e: Record<string, unknown> = {};
      for (let i = 0; i + 1 < entry.length; i += 2) e[String(entry[i])] = entry[i + 1];
      return `${String(e['username'])}: ${String(e['reason'])} ${String(e['object'])}`;
    })
    .filter((s) => s.startsWith('volume-medic-'));
}

describe('the deploy ACL file on a real redis-server', () => {
  it('refuses a connection without a user (default is off), a wrong password, and lets the health check only PING', async () => {
    await expect(connect(`redis://127.0.0.1:${port}`).ping()).rejects.toThrow(/NOAUTH/);
    await expect(connect(`redis://${REDIS_USERS.receiver}:wrong@127.0.0.1:${port}`).ping()).rejects.toThrow(/WRONGPASS/);
    // The readiness probe's command, as the chart's templates/redis.yaml runs it.
    const probe = spawnSync('redis-cli', ['-p', String(port), '--user', 'healthcheck', '--pass', 'healthcheck', '--no-auth-warning', 'ping'], {
      encoding: 'utf8',
    });
    expect(probe.stdout.trim()).toBe('PONG');
    const hc = connect(`redis://healthcheck:anything@127.0.0.1:${port}`);
    expect(await hc.ping()).toBe('PONG');
    await expect(hc.get(`${prefix}:vm:queues`)).rejects.toThrow(/NOPERM/);
  });

  it('runs a job receiver -> cluster worker -> node agent, each with its own user, with no command refused', async () => {
    await admin.acl('LOG', 'RESET');
    const node = 'acl-node-1';
    let receiver: Receiver | undefined;
    const closers: Array<() => Promise<void>> = [];
    try {
      // The receiver stores a node job from a webhook and answers reads of it.
      // Job reads are an operator's (OPERATOR_AUTH=insecure: operator identity is not this file's subject).
      receiver = await startReceiver(testConfig({ redisUrl: url('receiver'), queuePrefix: prefix, operatorAuth: 'insecure' }));
      const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved')]));
      expect(r.status).toBe(202);
      const residualId: string = r.json.accepted[0].id;
      // ...and records it in the console's index in the same script call (the receiver's user may).
      expect(await admin.zrange(incidentIndexKey(prefix), 0, -1)).toEqual([expect.stringContaining(`\t${residualId}\t`)]);

      // The cluster worker takes a cluster job (stored by the receiver's user, as triage would)
      // and hands its node half to the node's queue with its own dispatcher.
      const receiverRedis = producerConnection(url('receiver'));
      const receiverDispatcher = new Dispatcher(receiverRedis, { prefix, timeoutMs: 5000, sealer: testSealer('receiver') });
      closers.push(async () => {
        await receiverDispatcher.close();
        receiverRedis.disconnect();
      });
      // The receiver reads a node's announcement with a bounded read (GETRANGE), as its own user.
      if (receiverRedis.status !== 'ready') await new Promise((ready) => receiverRedis.once('ready', ready));
      const announced = agentRuns(['residual-multipath-cleanup'], node, new Date());
      await writeAgentRuns(admin, prefix, nodeQueueName(node), announced);
      expect(await readAgentRuns(receiverRedis, prefix, nodeQueueName(node))).toEqual(announced);
      const clusterRedis = producerConnection(url('cluster-worker'));
      // As workers/cluster-worker/main.ts: the node halves go into the console's index too.
      const clusterDispatcher = new Dispatcher(clusterRedis, {
        prefix,
        timeoutMs: 5000,
        sealer: testSealer('cluster-worker'),
        index: new IncidentIndex(clusterRedis, prefix),
      });
      closers.push(async () => {
        await clusterDispatcher.close();
        clusterRedis.disconnect();
      });
      const unmap: RbdUnmapJob = {
        version: 1,
        runbook: 'rbd-unmap',
        key: 'rbdunmap_acl_0123456789ab',
        target: { node, pool: 'kube', image: 'csi-vol-acl', watcher: '10.0.0.7:0/3069171236' },
        evidence: [{ source: 'api', summary: 'handed over by rbd-stale-mapping', raw: {} }],
      };
      const clusterCfg = testConfig({
        redisUrl: url('cluster-worker'),
        queuePrefix: prefix,
        defaultMode: 'enforce',
        stateDir: join(dir, 'cluster'),
      });
      const trust = trustFromConfig(clusterCfg, 'cluster-worker');
      const cluster = createRunbookWorker({
        queue: CLUSTER_QUEUE,
        store: new AgentStore({ redis: redisTarget(clusterCfg), process: 'cluster-worker', prefix, log: silent }),
        ranOn: 'cluster-worker',
        log: silent,
        modeOf: () => 'enforce',
        accepts: () => undefined,
        lockDurationMs: clusterCfg.lockDurationMs,
        controls: controlsFromConfig(clusterCfg),
        trust: { ring: trust.ring, allowUnsigned: false, seen: seenWork(join(dir, 'cluster', 'seen-work.json'), silent) },
        registry: {
          'rbd-stale-mapping': async (_job, ctx) => {
            await clusterDispatcher.enqueue([unmap]);
            await ctx.audit?.('destructive-step', `job/${ctx.jobId}/handoff`, 'acl test');
            return done('rbd-stale-mapping', ctx.ranOn);
          },
        },
      });
      closers.push(() => cluster.close());
      const [stale] = await receiverDispatcher.enqueue([
        {
          version: 1,
          runbook: 'rbd-stale-mapping',
          key: 'rbd_kube_csi-vol-acl_0123456789ab',
          target: { pool: 'kube', image: 'csi-vol-acl', pod: { namespace: 'shop', name: 'db-0' }, node },
          evidence: [{ source: 'k8s-event', summary: 'FailedMount', raw: {} }],
        } as RemediationJob,
      ]);

      // The node agent runs both jobs of its node, asking the operator controls and the breakers
      // before a destructive step (their Lua scripts run under its user too).
      const agent = createNodeAgent({
        config: testConfig({
          redisUrl: url('node-agent'),
          queuePrefix: prefix,
          nodeName: node,
          defaultMode: 'enforce',
          approvalHighRisk: false,
          stateDir: join(dir, 'agent'),
        }),
        log: silent,
        registry: {
          'residual-multipath-cleanup': async (_job, ctx) => step(ctx, 'residual-multipath-cleanup'),
          'rbd-unmap': async (_job, ctx) => step(ctx, 'rbd-unmap'),
        },
      });
      closers.push(() => agent.close());

      const finished = async (id: string): Promise<string> =>
        waitFor(`job ${id} to finish`, async () => {
          const j = await getJson(`${receiver!.url}/v1/jobs/${encodeURIComponent(id)}`);
          return j.state === 'completed' || j.state === 'failed' ? `${j.state}${j.failedReason ? `: ${j.failedReason}` : ''}` : undefined;
        });
      expect(await finished(residualId)).toBe('completed');
      expect(await finished(stale!.id)).toBe('completed');
      expect(await finished(unmap.key)).toBe('completed');
      // The cluster worker's user may write the index: the rbd-unmap job it stored is there.
      expect(await new IncidentIndex(admin, prefix).locate(unmap.key)).toMatchObject({
        queue: nodeQueueName(node),
        node,
        runbook: 'rbd-unmap',
      });
      expect((await getJson(`${receiver.url}/v1/jobs?queue=${encodeURIComponent(nodeQueueName(node))}`)).jobs?.length ?? 2).toBeGreaterThan(0);
    } finally {
      for (const c of closers.reverse()) await c();
      await receiver?.close();
    }
    expect(await refusals()).toEqual([]);
  });

  it("runs the cluster worker's no-agent check (report, then fail a job no agent took) and the receiver's /metrics of it, with no command refused", async () => {
    await admin.acl('LOG', 'RESET');
    const receiver = await startReceiver(testConfig({ redisUrl: url('receiver'), queuePrefix: prefix }));
    const clusterRedis = producerConnection(url('cluster-worker'));
    // A producer connection queues nothing while it connects (AUTH, the ready check): the check
    // below must not be its first command before it is up (.ci/run of c213cfe failed that way).
    await whenReady(clusterRedis, 10_000);
    let offset = 0;
    const watch = new NoAgentWatch({
      redis: clusterRedis,
      prefix,
      graceMs: 60_000,
      deadlineMs: 300_000,
      intervalMs: 30_000,
      log: silent,
      workerConnection: () => workerConnection(url('cluster-worker')),
      now: () => Date.now() + offset,
    });
    try {
      const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert('acl-lost-1', 'resolved')]));
      const id: string = r.json.accepted[0].id;
      offset = 61_000;
      expect([...(await watch.check()).stranded.values()].flat().map((j) => j.id)).toEqual([id]);
      expect(await (await fetch(`${receiver.url}/metrics`)).text()).toMatch(/^volume_medic_jobs_without_agent 1$/m);
      offset = 301_000;
      expect((await watch.check()).failed).toEqual([id]);
    } finally {
      await watch.close();
      clusterRedis.disconnect();
      await receiver.close();
    }
    expect(await refusals()).toEqual([]);
  });

  it.each(['receiver', 'cluster-worker', 'node-agent'] as const)('refuses the %s anything outside its prefix and every admin command', async (c) => {
    const r = connect(url(c));
    expect(await r.ping()).toBe('PONG');
    // NOPERM, or from inside a script "the user executing the script can't run this command".
    const refused = async (what: Promise<unknown>): Promise<void> => expect(what).rejects.toThrow(/NOPERM|can't run this command/);
    await refused(r.flushall());
    await refused(r.flushdb());
    await refused(r.config('GET', 'requirepass'));
    await refused(r.keys('*'));
    await refused(r.set('someone-else:key', 'x'));
    await refused(r.get(`not-${prefix}:vm:queues`));
    // A script runs under the caller's ACL: neither its declared keys nor its commands escape it.
    await refused(r.eval("return redis.call('SET', KEYS[1], 'x')", 1, 'someone-else:key'));
    await refused(r.eval("return redis.call('FLUSHALL')", 0));
    await refused(r.script('FLUSH'));
    await refused(r.call('FUNCTION', 'FLUSH'));
    await refused(r.call('ACL', 'LIST'));
    await refused(r.client('LIST'));
    await refused(r.publish('anything', 'x'));
    await refused(r.call('SHUTDOWN', 'NOSAVE'));
    // Inside its prefix it may write (a node agent only its queues and what a worker records).
    if (c === 'node-agent') {
      await refused(r.set(`${prefix}:acl-test:${c}`, 'ok'));
      expect(await r.set(`${prefix}:vm-node-acl-test:x`, 'ok')).toBe('OK');
      // It reads the operator controls, and cannot change them: no HSET enforce, no lifting a pause.
      expect(await r.hget(`${prefix}:vm:ctl:modes`, 'runbook/x')).toBeNull();
      await refused(r.hset(`${prefix}:vm:ctl:modes`, 'runbook/x', '{"mode":"enforce"}'));
      await refused(r.hdel(`${prefix}:vm:ctl:pause`, 'cluster'));
      await refused(r.eval("return redis.call('HSET', KEYS[1], 'cluster', '{}')", 1, `${prefix}:vm:ctl:pause`));
    } else {
      expect(await r.set(`${prefix}:acl-test:${c}`, 'ok')).toBe('OK');
    }
    if (c === 'receiver') await refused(r.bzpopmin(`${prefix}:x:marker`, 0.01));
    // REDIS_ACK_REPLICAS' WAIT (src/adapters/redis/replica-ack.ts): the receiver's to send; no replica here, so 0 acknowledged.
    if (c === 'receiver') expect(await r.call('WAIT', '1', '10')).toBe(0);
    else await refused(r.call('WAIT', '1', '10'));
  });

  it('connects with rediss:// and the CA in REDIS_TLS_CA_FILE, and refuses a server it cannot verify', async ({ skip }) => {
    if (!tlsPort) return skip('openssl is not installed');
    const tlsUrl = url('receiver', 'rediss', tlsPort, 'localhost');
    // Through configuration, as the processes read it.
    const ok = producerConnection(redisTarget(loadConfig('receiver', { REDIS_URL: tlsUrl, REDIS_TLS_CA_FILE: join(dir, 'ca.pem') }))) as Redis;
    connections.push(ok);
    ok.on('error', () => {});
    await waitFor('the TLS connection', async () => (ok.status === 'ready' ? true : undefined));
    expect(await ok.ping()).toBe('PONG');
    // Without the CA (the system's only), the server's certificate does not verify.
    const unverified = producerConnection(redisTarget(loadConfig('receiver', { REDIS_URL: tlsUrl }))) as Redis;
    connections.push(unverified);
    const error = await new Promise<Error>((resolve) => unverified.once('error', resolve));
    expect(error.message).toMatch(/self.signed|certificate/i);
    await expect(unverified.ping()).rejects.toThrow();
  });
});

function done(runbook: RemediationJob['runbook'], ranOn: string): RunbookResult {
  return {
    runbook,
    mode: 'enforce',
    outcome: 'succeeded',
    summary: 'acl test',
    facts: {},
    plan: {},
    refusals: [],
    steps: [],
    commands: [],
    ranOn,
  };
}

async function step(
  ctx: Parameters<NonNullable<import('../../../workers/engine/registry.ts').RunbookRegistry['rbd-unmap']>>[1],
  runbook: RemediationJob['runbook'],
): Promise<RunbookResult> {
  const s = {
    id: `acl:${runbook}`,
    description: 'acl test step',
    destructive: true,
    evidence: [{ claim: 'acl test', source: 'test', observedAt: new Date().toISOString(), status: 'holds' as const }],
  };
  const decision = await ctx.gate?.beforeStep(s, { summary: 'acl test', steps: [s] });
  if (decision && !decision.go) throw new Error(`parked: ${decision.park.why}`);
  await ctx.audit?.('destructive-step', `job/${ctx.jobId}/${s.id}`, 'acl test');
  return done(runbook, ctx.ranOn);
}
