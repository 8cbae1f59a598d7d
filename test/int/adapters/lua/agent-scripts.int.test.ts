import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { freePort } from '../../../../scripts/lib/local-redis.ts';
import { agentScripts } from '../../../../src/adapters/lua/registry.ts';
import { nodeUserName } from '../../../../src/adapters/redis/node-user-acl.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { EnrolAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { redisTlsFiles } from '../../../support/redis-tls-files.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { rawQueue } from '../../../support/raw-jobs.ts';

// Issue 44, item 1: a node's own Redis user could EVAL a script that never ends, and a BUSY Redis
// answers nothing else (SCRIPT KILL: UNKILLABLE once it wrote; only SIGKILL stops it): every
// webhook 503, fleet-wide. Node identities now run scripts by SHA only, those the receiver loads
// (src/adapters/lua/registry.ts, src/adapters/redis/script-preload.ts). Here against what a cluster
// runs: redis-server over TLS with the chart's ACL file, the real receiver with enrolment and
// per-node users (TokenReview from the fake API server), a real enrolled node agent process.

const skip = spawnSync('redis-server', ['--version']).error !== undefined || spawnSync('openssl', ['version']).error !== undefined;
const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const DAY = 86_400_000;
const WEBHOOK_TOKEN = 'webhook-token-agentscripts-01';
const NEVER_ENDS = "redis.call('SET', KEYS[1], '1'); while true do end";

describe.skipIf(skip)('node identities run only the scripts the receiver loaded', () => {
  const prefix = uniquePrefix('agentlua');
  const passwords = { receiver: 'pw-receiver-7711', 'cluster-worker': 'pw-cluster-7712', 'node-agent': 'pw-agent-7713' };
  const keys = writeControlKeys();
  let dir: string;
  let server: ChildProcess | undefined;
  let port: number;
  let tls: { ca: string; cert: string; key: string };
  let admin: Redis;
  let api: FakeKubeApi;
  let receiver: Receiver;
  let agent: ChildProcess | undefined;
  let out = '';
  const opened: Redis[] = [];

  const tlsTo = (o: RedisOptions = {}): RedisOptions => ({ host: 'localhost', port, tls: { ca: readFileSync(tls.ca) }, ...o });
  /** The chart's TLS Redis: no plain port, the ACL file, nothing kept on disk (a restart loses what is in memory). */
  const startServer = async (): Promise<void> => {
    server = spawn(
      'redis-server',
      [
        ...['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-ca-cert-file', tls.ca],
        ...['--tls-auth-clients', 'no', '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        ...['--maxmemory-policy', 'noeviction', '--aclfile', join(dir, 'users.acl')],
      ],
      { stdio: 'ignore' },
    );
    const probe = new Redis(tlsTo({ username: 'vmtest-admin', password: 'admin-pw', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }));
    probe.on('error', () => {});
    try {
      await waitFor(
        'redis-server over TLS',
        () =>
          probe.connect().then(
            () => probe.ping().then(() => true),
            () => undefined,
          ),
        10_000,
      );
    } finally {
      probe.disconnect();
    }
  };
  const enrol = async (token: string, node: string) => {
    const res = await fetch(`${receiver.url}/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ as: 'node-agent', node }),
    });
    expect(res.status).toBe(200);
    return EnrolAnswer.parse(await res.json());
  };
  /** The command refusals (not failed logins) of `user` in Redis' ACL LOG. */
  const refusedCommands = async (user: string): Promise<string[]> =>
    ((await admin.acl('LOG', '128')) as unknown[][])
      .map((entry) => {
        const e: Record<string, unknown> = {};
        for (let i = 0; i + 1 < entry.length; i += 2) e[String(entry[i])] = entry[i + 1];
        return e;
      })
      .filter((e) => e['username'] === user && e['reason'] !== 'auth')
      .map((e) => `${String(e['reason'])} ${String(e['object'])}`);
  const addJob = async (node: string, key: string): Promise<void> => {
    const queue = rawQueue(admin, prefix, nodeQueueName(node));
    try {
      const job: RemediationJob = {
        version: 1,
        key,
        runbook: 'residual-multipath-cleanup',
        target: { node },
        evidence: [{ source: 'api', summary: 's', raw: null }],
      };
      await queue.add(job.runbook, sealJob(testSealer('receiver'), nodeQueueName(node), job, DAY), { jobId: job.key });
    } finally {
      await queue.close();
    }
  };
  const scriptsLoaded = async (): Promise<number> =>
    ((await admin.call('SCRIPT', 'EXISTS', ...agentScripts().map((s) => s.sha))) as number[]).filter((x) => x === 1).length;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vm-agent-lua-'));
    tls = redisTlsFiles(dir)!;
    // Test-only: an admin user after the chart's lines, to read ACL LOG and restart the server.
    writeFileSync(join(dir, 'users.acl'), `${renderRedisAcl({ prefix, passwords })}user vmtest-admin on >admin-pw ~* &* +@all\n`);
    port = await freePort();
    await startServer();
    admin = new Redis(tlsTo({ username: 'vmtest-admin', password: 'admin-pw' }));
    admin.on('error', () => {});
    api = await startFakeKubeApi();
    for (const node of ['node-a', 'node-b']) api.addAgentPod(`token-${node}`, { serviceAccount: AGENT_SA, pod: `agent-${node}`, uid: `uid-${node}`, node });
    receiver = await startReceiver(
      testConfig({
        redisUrl: `rediss://${REDIS_USERS.receiver}:${passwords.receiver}@localhost:${port}`,
        redisTlsCaFile: tls.ca,
        queuePrefix: prefix,
        tokens: [WEBHOOK_TOKEN],
        operatorAuth: 'off',
        enrolNodeAgents: [AGENT_SA],
        redisNodeUsers: true,
        fleetMetricsLeaseSeconds: 0,
        controlSigningKeyFile: keys.keyFile,
        controlVerifyCertFile: keys.certFile,
      }),
      { operatorKubeConfig: api.kubeConfig() },
    );
  }, 60_000);
  afterAll(async () => {
    agent?.kill('SIGKILL');
    for (const r of opened) r.disconnect();
    await receiver?.close();
    await api?.close();
    admin?.disconnect();
    // SIGKILL: a server stuck in a script (the attack, with its control removed) answers nothing else.
    server?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an enrolled agent runs its jobs as its own user by EVALSHA only, and again after Redis restarts and loses every script and user', async () => {
    // The receiver loaded the agents' scripts at its start.
    expect(await scriptsLoaded()).toBe(agentScripts().length);
    await admin.acl('LOG', 'RESET');
    const tokenFile = join(dir, 'token-b');
    writeFileSync(tokenFile, 'token-node-b');
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        // rediss:// with the CA as the process trusts it (the stub agent takes no REDIS_TLS_CA_FILE).
        REDIS_URL: `rediss://localhost:${port}`,
        NODE_EXTRA_CA_CERTS: tls.ca,
        QUEUE_PREFIX: prefix,
        NODE_NAME: 'node-b',
        STATE_DIR: mkdtempSync(join(tmpdir(), 'vm-agent-lua-state-')),
        ENROL_URL: receiver.url,
        ENROL_TOKEN_FILE: tokenFile,
        CONTROL_VERIFY_CERT_FILE: keys.certFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('the agent to enrol and start', async () => (out.includes('READY') ? true : undefined), 20_000);
    await addJob('node-b', 'lua-b-1');
    await waitFor('the first job to run', async () => (out.includes('RAN residual-multipath-cleanup lua-b-1') ? true : undefined), 20_000);
    const clients = (await admin.call('CLIENT', 'LIST')) as string;
    expect(clients).toMatch(new RegExp(`user=${nodeUserName('node-b').replace(/\./g, '\\.')} `));
    // Not one command refused: it never sent EVAL (it would have been NOPERM, in this log).
    expect(await refusedCommands(nodeUserName('node-b'))).toEqual([]);

    // A restart: the server comes back with its ACL file only, no per-node user, an empty script cache.
    await admin.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
    await waitFor('the server to stop', async () => (server!.exitCode !== null || server!.signalCode !== null ? true : undefined), 10_000);
    await startServer();
    await waitFor(
      'the admin connection back',
      () =>
        admin.ping().then(
          () => true,
          () => undefined,
        ),
      10_000,
    );
    await admin.acl('LOG', 'RESET');
    // The agent's WRONGPASS makes it enrol again; the receiver applies its user and loads the scripts.
    await waitFor('the scripts loaded again', async () => ((await scriptsLoaded()) === agentScripts().length ? true : undefined), 30_000);
    await addJob('node-b', 'lua-b-2');
    await waitFor('the next job to run', async () => (out.includes('RAN residual-multipath-cleanup lua-b-2') ? true : undefined), 40_000);
    expect(await refusedCommands(nodeUserName('node-b'))).toEqual([]);

    // A script cache lost without a restart (SCRIPT FLUSH): the agent's EVALSHA answers NOSCRIPT,
    // its EVAL NOPERM; it waits, the receiver's periodic check loads the scripts again, the job runs.
    await admin.call('SCRIPT', 'FLUSH');
    await addJob('node-b', 'lua-b-3');
    await waitFor('the job after the flush to run', async () => (out.includes('RAN residual-multipath-cleanup lua-b-3') ? true : undefined), 60_000);
    for (const r of await refusedCommands(nodeUserName('node-b'))) expect(r).toBe('command eval');
  }, 150_000);

  it("refuses node A's own script that never ends (and every other way to run Lua of its own): the receiver keeps answering webhooks", async () => {
    const a = await enrol('token-node-a', 'node-a');
    expect(a.redis?.username).toBe(nodeUserName('node-a'));
    const asA = new Redis(tlsTo({ username: a.redis!.username, password: a.redis!.password, maxRetriesPerRequest: 0 }));
    asA.on('error', () => {});
    opened.push(asA);
    const ownKey = `${prefix}:${nodeQueueName('node-a')}:x`;
    const outcome = (p: Promise<unknown>): Promise<string> =>
      Promise.race([
        p.then(
          (r) => `answered ${String(r)}`,
          (e: Error) => e.message,
        ),
        new Promise<string>((r) => setTimeout(() => r('no answer: the script runs'), 3_000)),
      ]);
    expect(await asA.ping()).toBe('PONG'); // connected and authenticated: the EVAL goes out at once
    const attack = outcome(asA.eval(NEVER_ENDS, 1, ownKey));
    // Meanwhile and after (once the script would run, and past Redis' 5 s before it answers BUSY):
    // a webhook is stored and answered 202 within 30 s (each a new alert, never a repeat answer).
    await new Promise((r) => setTimeout(r, 1_000));
    const statuses: number[] = [];
    let i = 0;
    await waitFor(
      'a webhook answered 202',
      async () => {
        const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(`busy-${i++}`, 'resolved')]), WEBHOOK_TOKEN);
        statuses.push(r.status);
        return r.status === 202 ? true : undefined;
      },
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; answers: ${[...new Set(statuses)].join(', ')}`);
    });
    expect(await attack).toMatch(/NOPERM/);
    // Every other way to run a script of its own, and to list key names of other nodes (issue 44, low item).
    for (const [what, p] of [
      ['EVAL_RO', asA.call('EVAL_RO', 'while true do end', 0)],
      ['SCRIPT LOAD', asA.call('SCRIPT', 'LOAD', NEVER_ENDS)],
      ['FUNCTION LOAD', asA.call('FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('f', function() while true do end end)")],
      ['FCALL', asA.call('FCALL', 'f', 0)],
      ['SCAN', asA.scan('0', 'MATCH', `${prefix}:*`)],
      ['KEYS', asA.keys(`${prefix}:*`)],
    ] as const)
      expect(await outcome(p), what).toMatch(/NOPERM/);
    // What it may run is what the receiver loaded: BullMQ's and ours, by SHA.
    expect(await asA.call('EVALSHA', 'ffffffffffffffffffffffffffffffffffffffff', 0).catch((e: Error) => e.message)).toMatch(/NOSCRIPT/);
    expect(await admin.exists(ownKey)).toBe(0);
  }, 60_000);
});
