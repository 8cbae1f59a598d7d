import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { nodeUserName, nodeUsersKey } from '../../../../src/adapters/redis/node-user-acl.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { EnrolAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { podTokenUser, startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { uniquePrefix } from '../../../support/redis.ts';
import { topologiesAvailable } from '../../../support/redis-topology.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { rawQueue } from '../../../support/raw-jobs.ts';
import { type AclRedis, startAclRedis } from '../../../support/acl-redis.ts';

// Issue 30, node-scoped Redis identity, wired end to end: with REDIS_NODE_USERS the receiver
// (as its own ACL user of the deploy file) creates the enrolling node's Redis user, hands its
// password to that node's agent only, and the real enrolled agent runs its work as that user;
// the same credentials get NOPERM on another node's queue, the approvals, the audit list and the
// queue registry. A deleted Node's user goes with it, and so does its password (issue 44, item 5).

const skip = topologiesAvailable();
const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const DAY = 86_400_000;
const user = (node: string) => podTokenUser({ serviceAccount: AGENT_SA, pod: `agent-${node}`, uid: `uid-${node}`, node });

describe.skipIf(skip)("enrolment hands each agent its own node's Redis user (REDIS_NODE_USERS)", () => {
  const prefix = uniquePrefix('enrolacl');
  const passwords = { receiver: 'pw-receiver-5511', 'cluster-worker': 'pw-cluster-5512', 'node-agent': 'pw-agent-5513' };
  const files = writeControlKeys();
  let redis: AclRedis | undefined;
  let dir: string;
  let port: number;
  let admin: Redis;
  let api: FakeKubeApi;
  let receiver: Receiver;
  let agent: ChildProcess | undefined;
  let out = '';
  const agentOut = (): string => out;
  const stateDir = mkdtempSync(join(tmpdir(), 'vm-enrol-acl-state-'));
  /** node-b's agent, enrolled with its pod's token (started again after it stops for a new password). */
  const startAgent = (): void => {
    const tokenFile = join(dir, 'token-b');
    writeFileSync(tokenFile, 'token-b');
    agent?.kill('SIGKILL');
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        REDIS_URL: `redis://127.0.0.1:${port}`,
        QUEUE_PREFIX: prefix,
        NODE_NAME: 'node-b',
        STATE_DIR: stateDir,
        ENROL_URL: receiver.url,
        ENROL_TOKEN_FILE: tokenFile,
        CONTROL_VERIFY_CERT_FILE: files.certFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
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

  beforeAll(async () => {
    redis = await startAclRedis({ acl: renderRedisAcl({ prefix, passwords }), name: 'vm-enrol-acl' });
    ({ dir, port } = redis);
    admin = new Redis(redis.adminUrl);
    api = await startFakeKubeApi();
    api.addUser('token-a', user('node-a'));
    api.addUser('token-b', user('node-b'));
    for (const node of ['node-a', 'node-b'])
      api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `agent-${node}`, namespace: NS, uid: `uid-${node}` }, spec: { nodeName: node } });
    api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-b' },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(Date.now() - 7_200_000).toISOString() }] },
    });
    // KUBE_WATCH reads its access like a real process: a kubeconfig naming the fake.
    writeFileSync(join(dir, 'kubeconfig'), api.kubeConfig().exportConfig());
    process.env['KUBECONFIG'] = join(dir, 'kubeconfig');
    receiver = await startReceiver(
      testConfig({
        redisUrl: `redis://${REDIS_USERS.receiver}:${passwords.receiver}@127.0.0.1:${port}`,
        queuePrefix: prefix,
        tokens: ['webhook-token-enrolacl-0123'],
        operatorAuth: 'off',
        enrolNodeAgents: [AGENT_SA],
        redisNodeUsers: true,
        kubeWatch: true,
        kubeReconcileSeconds: 0,
        fleetMetricsLeaseSeconds: 0,
        controlSigningKeyFile: files.keyFile,
        controlVerifyCertFile: files.certFile,
      }),
      { operatorKubeConfig: api.kubeConfig() },
    );
  });
  const kubeconfigBefore = process.env['KUBECONFIG'];
  afterAll(async () => {
    agent?.kill('SIGKILL');
    await receiver?.close();
    await api?.close();
    if (kubeconfigBefore === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = kubeconfigBefore;
    admin?.disconnect();
    await redis?.stop();
  });

  it("the enrolled agent runs its node's work as its own Redis user, which is refused everything of another node and the shared records", async () => {
    const b = await enrol('token-b', 'node-b');
    expect(b.redis?.username).toBe(nodeUserName('node-b'));
    // Only the password's hash is in Redis.
    expect(Object.values(await admin.hgetall(nodeUsersKey(prefix)))).not.toContain(b.redis!.password);
    startAgent();
    await waitFor('the agent to enrol and start', async () => (out.includes('READY') ? true : undefined), 20_000);
    const queue = rawQueue(admin, prefix, nodeQueueName('node-b'));
    try {
      const job: RemediationJob = {
        version: 1,
        key: 'acl-b-1',
        runbook: 'residual-multipath-cleanup',
        target: { node: 'node-b' },
        evidence: [{ source: 'api', summary: 's', raw: null }],
      };
      await queue.add(job.runbook, sealJob(testSealer('receiver'), nodeQueueName('node-b'), job, DAY), { jobId: job.key });
      await waitFor('the job to run', async () => (out.includes('RAN residual-multipath-cleanup acl-b-1') ? true : undefined), 15_000);
    } finally {
      await queue.close();
    }
    // It ran as node-b's own user: the agent's connections are that user's.
    const clients = (await admin.call('CLIENT', 'LIST')) as string;
    expect(clients).toMatch(new RegExp(`user=${nodeUserName('node-b').replace(/\./g, '\\.')} `));
    // The same credentials, as root on node-b holds them: nothing of node-a's, nor the shared records.
    const asB = new Redis({ port, host: '127.0.0.1', username: b.redis!.username, password: b.redis!.password, maxRetriesPerRequest: 0 });
    try {
      const refused = async (p: Promise<unknown>) => expect(p).rejects.toThrow(/NOPERM/);
      await refused(asB.lpush(`${prefix}:${nodeQueueName('node-a')}:wait`, 'x'));
      await refused(asB.hset(`${prefix}:vm:ctl:modes`, 'runbook/x', '{}'));
      await refused(asB.sadd(`${prefix}:vm:queues`, nodeQueueName('node-x')));
      await refused(asB.set(`${prefix}:${nodeQueueName('node-a')}:vm:approval:j1`, '{}'));
      await refused(asB.lpush(`${prefix}:vm:ctl:audit`, '{}'));
      await refused(asB.hset(`${prefix}:vm:ctl:parked`, 'j1', '{}'));
      await refused(asB.del(`${prefix}:${nodeQueueName('node-a')}:vm:audit`));
      expect(await asB.set(`${prefix}:${nodeQueueName('node-b')}:probe`, '1')).toBe('OK');
    } finally {
      asB.disconnect();
    }
  });

  it("removes a node's user when its Node object is deleted", async () => {
    api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a' },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(Date.now() - 7_200_000).toISOString() }] },
    });
    await enrol('token-a', 'node-a');
    await waitFor("node-a's user", async () => (((await admin.call('ACL', 'USERS')) as string[]).includes(nodeUserName('node-a')) ? true : undefined));
    api.remove('v1', 'Node', 'node-a');
    await waitFor(
      "node-a's user to go",
      async () => (((await admin.call('ACL', 'USERS')) as string[]).includes(nodeUserName('node-a')) ? undefined : true),
      10_000,
    );
    expect((await admin.call('ACL', 'USERS')) as string[]).toContain(nodeUserName('node-b'));
  });

  it('a running agent whose Node was deleted and made again gets a new user at once: WRONGPASS makes it enrol again, for new credentials', async () => {
    // node-b's agent from the first test still runs, as node-b's user.
    const users = async () => (await admin.call('ACL', 'USERS')) as string[];
    const before = await enrol('token-b', 'node-b');
    api.remove('v1', 'Node', 'node-b');
    await waitFor("node-b's user to go", async () => ((await users()).includes(nodeUserName('node-b')) ? undefined : true), 10_000);
    // The kubelet registers the node again; the agent's pod kept running (nothing asks it to enrol).
    api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-b' },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(Date.now() - 7_200_000).toISOString() }] },
    });
    // Not the 30-minute renewal: its connection's WRONGPASS asks for a renewal within seconds. The
    // deleted Node's credentials died with it (issue 44, item 5): the renewal hands out a new
    // password, and the agent stops to use it (the DaemonSet starts it again; here the test).
    await waitFor("node-b's user back", async () => ((await users()).includes(nodeUserName('node-b')) ? true : undefined), 20_000);
    await waitFor('the agent to stop for its new password', async () => (out.includes('REDIS-CHANGED') ? true : undefined), 20_000);
    const after = await enrol('token-b', 'node-b');
    expect(after.redis!.password).not.toBe(before.redis!.password);
    out = '';
    startAgent();
    await waitFor('the agent to start again', async () => (out.includes('READY') ? true : undefined), 20_000);
    // What the receiver seals for node-b now: its keys of node-b's new generation.
    const name = Object.keys(after.keys).find((k) => k.startsWith('receiver.'))!;
    const key = Buffer.from(after.keys[name]!, 'base64');
    const receiverNow = sealerOf({
      verify: new Map([[name, key]]),
      scope: after.queue,
      signing: { role: 'receiver', kid: name.slice('receiver.'.length), key },
    })!;
    const queue = rawQueue(admin, prefix, nodeQueueName('node-b'));
    try {
      const job: RemediationJob = {
        version: 1,
        key: 'acl-b-2',
        runbook: 'residual-multipath-cleanup',
        target: { node: 'node-b' },
        evidence: [{ source: 'api', summary: 's', raw: null }],
      };
      await queue.add(job.runbook, sealJob(receiverNow, nodeQueueName('node-b'), job, DAY), { jobId: job.key });
      await waitFor('the job to run', async () => (agentOut().includes('RAN residual-multipath-cleanup acl-b-2') ? true : undefined), 30_000);
    } finally {
      await queue.close();
    }
  });
});
