import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_USERS, renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { nodeUserName } from '../../../../src/adapters/redis/node-user-acl.ts';
import { GENERATIONS_POLL_MS, nodeGenerationKeys } from '../../../../src/adapters/redis/node-generations.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { run as cli } from '../../../../src/control/cli/main.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { EnrolAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import type { Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { waitFor } from '../../../support/wait.ts';
import { podTokenUser } from '../../../testkit/fake-kube-api.ts';
import { startOperators, VIEWERS, type Operators } from '../../../testkit/operators.ts';
import { topologiesAvailable } from '../../../support/redis-topology.ts';
import { rawQueue } from '../../../support/raw-jobs.ts';
import { testJobs } from '../../../testkit/jobs.ts';
import { type AclRedis, startAclRedis } from '../../../support/acl-redis.ts';

// Issue 44, item 5: a node's credentials can be revoked. Against real processes: a redis-server
// with the chart's rendered ACL, the real receiver (enrolment, per-node Redis users, the Node
// watch, operator identity) on the wire fake of the API server (TokenReview, SubjectAccessReview,
// Nodes and Pods), and real enrolled agent processes. A deleted Node's token, password and keys
// are worth nothing any more, also within the enrolment cache's hour; an operator's revoke kills
// a live node's at once and its agent carries on with new ones; nodes never revoked keep theirs,
// across a restart of the receiver.

const skip = topologiesAvailable();
const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const DAY = 86_400_000;
const HOUR_AGO = () => new Date(Date.now() - 3_600_000).toISOString();

const residual = (node: string, key: string): RemediationJob => ({
  version: 1,
  key,
  runbook: 'residual-multipath-cleanup',
  target: { node },
  evidence: [{ source: 'api', summary: 's', raw: null }],
});

/** What root on a node seals with the receiver's key of its queue it holds (from its enrolment). */
const receiverKeyOf = (a: EnrolAnswer): Keyring => {
  const name = Object.keys(a.keys).find((k) => k.startsWith('receiver.'))!;
  const key = Buffer.from(a.keys[name]!, 'base64');
  return { verify: new Map([[name, key]]), scope: a.queue, signing: { role: 'receiver', kid: name.slice('receiver.'.length), key } };
};

describe.skipIf(skip)("a node's credentials can be revoked (issue 44, item 5)", () => {
  const prefix = `vmrevoke${process.pid}`;
  const passwords = { receiver: 'pw-receiver-7711', 'cluster-worker': 'pw-cluster-7712', 'node-agent': 'pw-agent-7713' };
  const files = writeControlKeys();
  let redis: AclRedis | undefined;
  let dir: string;
  let port: number;
  let admin: Redis;
  let ops: Operators;
  let config: Config;
  let receiver: Receiver;
  let replica: Receiver | undefined;
  const agents: ChildProcess[] = [];

  const putNode = (name: string): void => {
    ops.api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: HOUR_AGO() }] },
    });
  };
  /** An agent pod on `node` and its projected token (what the kubelet would mount). */
  const putAgentPod = (node: string, pod: string) => {
    const uid = `uid-${pod}`;
    ops.api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: NS, uid }, spec: { nodeName: node } });
    ops.api.addUser(`token-${pod}`, podTokenUser({ serviceAccount: AGENT_SA, pod, uid, node }));
    return `token-${pod}`;
  };
  const enrol = async (token: string, node: string, url = receiver.url) => {
    const res = await fetch(`${url}/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ as: 'node-agent', node }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    return { status: res.status, json, answer: res.status === 200 ? EnrolAnswer.parse(json) : undefined };
  };
  /** AUTH with a node's password: 'OK' or Redis' error. */
  const auth = async (a: EnrolAnswer): Promise<string> => {
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {});
    try {
      await r.connect();
      return String(await r.call('AUTH', a.redis!.username, a.redis!.password));
    } catch (err) {
      return (err as Error).message;
    } finally {
      r.disconnect();
    }
  };
  const users = async () => (await admin.call('ACL', 'USERS')) as string[];
  const startAgent = (node: string, token: string) => {
    const tokenFile = join(dir, `${token}.jwt`);
    writeFileSync(tokenFile, token);
    let out = '';
    const child = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        REDIS_URL: `redis://127.0.0.1:${port}`,
        QUEUE_PREFIX: prefix,
        NODE_NAME: node,
        STATE_DIR: mkdtempSync(join(tmpdir(), 'vm-revoke-state-')),
        ENROL_URL: receiver.url,
        ENROL_TOKEN_FILE: tokenFile,
        CONTROL_VERIFY_CERT_FILE: files.certFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    agents.push(child);
    return { child, out: () => out };
  };
  const settled = async (node: string, id: string) => {
    const jobs = testJobs(admin, prefix);
    try {
      return await waitFor(
        `job ${id} to finish`,
        async () => {
          const j = await jobs.get(nodeQueueName(node), id);
          return j && (j.finishedOn ?? 0) > 0 ? j : undefined;
        },
        20_000,
      );
    } finally {
      await jobs.close();
    }
  };
  const addJob = async (node: string, job: RemediationJob, ring: Keyring) => {
    const queue = rawQueue(admin, prefix, nodeQueueName(node));
    try {
      await queue.add(job.runbook, sealJob(sealerOf(ring)!, nodeQueueName(node), job, DAY), { jobId: job.key });
    } finally {
      await queue.close();
    }
  };
  /** Work the receiver itself seals and stores for `node` (an operator's forced placeholder release). */
  const receiverWork = async (node: string, pv: string, url = receiver.url): Promise<string> => {
    const res = await fetch(`${url}/v1/placeholders/release`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ops.token('alice')}` },
      body: JSON.stringify({ node, pv, path: '/dev/disk/by-id/wwn-0x5000c5001234', force: true, why: 'revocation test' }),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { accepted: { id: string } }).accepted.id;
  };
  const revoke = async (node: string, token: string, why?: string) => {
    const res = await fetch(`${receiver.url}/v1/nodes/${node}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(why ? { why } : {}),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    redis = await startAclRedis({ acl: renderRedisAcl({ prefix, passwords }), name: 'vm-revoke' });
    ({ dir, port } = redis);
    admin = new Redis(redis.adminUrl);
    ops = await startOperators();
    writeFileSync(join(dir, 'kubeconfig'), ops.api.kubeConfig().exportConfig());
    process.env['KUBECONFIG'] = join(dir, 'kubeconfig');
    config = testConfig({
      redisUrl: `redis://${REDIS_USERS.receiver}:${passwords.receiver}@127.0.0.1:${port}`,
      queuePrefix: prefix,
      tokens: ['webhook-token-revoke-0123'],
      enrolNodeAgents: [AGENT_SA],
      redisNodeUsers: true,
      kubeWatch: true,
      kubeReconcileSeconds: 0,
      fleetMetricsLeaseSeconds: 0,
      controlSigningKeyFile: files.keyFile,
      controlVerifyCertFile: files.certFile,
    });
    receiver = await startReceiver(config, { operatorKubeConfig: ops.api.kubeConfig() });
  });
  const kubeconfigBefore = process.env['KUBECONFIG'];
  afterAll(async () => {
    for (const a of agents) a.kill('SIGKILL');
    await replica?.close();
    await receiver?.close();
    await ops?.close();
    if (kubeconfigBefore === undefined) delete process.env['KUBECONFIG'];
    else process.env['KUBECONFIG'] = kubeconfigBefore;
    admin?.disconnect();
    await redis?.stop();
  });

  it("a deleted Node's token, Redis password and keys are worth nothing, also within the enrolment cache's hour; the Node made again enrols anew", async () => {
    putNode('node-a');
    const tokenA = putAgentPod('node-a', 'agent-a');
    const before = (await enrol(tokenA, 'node-a')).answer!;
    expect(await auth(before)).toBe('OK');
    // Its pod and its Node are deleted; the API server refuses the token from now on.
    ops.api.remove('v1', 'Pod', 'agent-a', NS);
    ops.api.remove('v1', 'Node', 'node-a');
    ops.api.removeUser(tokenA);
    await waitFor("node-a's Redis user to go", async () => ((await users()).includes(nodeUserName('node-a')) ? undefined : true), 10_000);
    // The same token, well within the hour its review was cached for: no credentials.
    const again = await enrol(tokenA, 'node-a');
    expect(again.status).not.toBe(200);
    expect(again.answer).toBeUndefined();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await users()).not.toContain(nodeUserName('node-a'));
    expect(await auth(before)).toMatch(/WRONGPASS/);

    // The kubelet registers node-a again (a new Node, a new uid) and its agent pod starts.
    putNode('node-a');
    const agent = startAgent('node-a', putAgentPod('node-a', 'agent-a2'));
    await waitFor('the new agent to enrol and start', async () => (agent.out().includes('READY') ? true : undefined), 20_000);
    const now = (await enrol('token-agent-a2', 'node-a')).answer!;
    expect(now.redis!.password).not.toBe(before.redis!.password);
    expect(Object.keys(now.keys).every((k) => k.endsWith('.g1'))).toBe(true);
    for (const [name, key] of Object.entries(before.keys)) expect(now.keys[`${name}.g1`]).not.toBe(key);
    expect(await auth(now)).toBe('OK');
    expect(await auth(before)).toMatch(/WRONGPASS/);

    // Work sealed with the keys the old node held is refused by the new agent, saying why.
    await addJob('node-a', residual('node-a', 'old-keys-a'), receiverKeyOf(before));
    const refused = await settled('node-a', 'old-keys-a');
    expect(refused.failedReason).toMatch(/untrusted work refused \(unknown-key\).*generation 0 .*revoked/);
    expect(agent.out()).not.toContain(' old-keys-a ');
    // What the receiver seals for node-a now runs there.
    const id = await receiverWork('node-a', 'pv-a');
    await waitFor('the receiver-sealed job to run', async () => (agent.out().includes(`RAN local-pv-placeholder ${id}`) ? true : undefined), 20_000);
  }, 120_000);

  it("revoke node-b: its old password fails AUTH at once and its old keys are refused; its agent enrols again and works, also with another replica's work", async () => {
    putNode('node-b');
    const tokenB = putAgentPod('node-b', 'agent-b');
    let agent = startAgent('node-b', tokenB);
    await waitFor('the agent to enrol and start', async () => (agent.out().includes('READY') ? true : undefined), 20_000);
    const before = (await enrol(tokenB, 'node-b')).answer!;
    expect(Object.keys(before.keys).some((k) => k.includes('.g'))).toBe(false);
    const first = await receiverWork('node-b', 'pv-b1');
    await waitFor('work before the revoke to run', async () => (agent.out().includes(`RAN local-pv-placeholder ${first}`) ? true : undefined), 20_000);
    // A second replica, sealing for node-b from its own table of generations.
    replica = await startReceiver(config, { operatorKubeConfig: ops.api.kubeConfig() });

    // A viewer may not; the admin may, through the CLI.
    expect((await revoke('node-b', ops.token('victor', VIEWERS))).status).toBe(403);
    const out: string[] = [];
    const errs: string[] = [];
    const code = await cli(
      ['--url', receiver.url, '--token', ops.token('alice'), 'revoke', 'node-b', '--why', 'node-b was rooted'],
      {},
      (s) => out.push(s),
      (s) => errs.push(s),
    );
    expect({ code, errs }).toEqual({ code: 0, errs: [] });
    expect(out.join('\n')).toMatch(/node-b: credentials revoked by alice, now of generation 1; Redis user removed/);
    // At once: the old password is refused, and a repeat changes nothing.
    expect(await auth(before)).toMatch(/WRONGPASS/);
    expect(await revoke('node-b', ops.token('alice'))).toMatchObject({ status: 200, json: { raised: false, generation: 1, recordedAs: 'alice' } });
    const audit = await new ControlsStore(admin, prefix).auditLog(50);
    expect(audit.filter((e) => e.action === 'node-revoke' && e.target === 'node/node-b').map((e) => [e.by, e.why])).toEqual([
      ['alice', '(already revoked: generation 1, nothing handed out since)'],
      ['alice', 'node-b was rooted (credentials now of generation 1)'],
    ]);

    // The agent's connection was refused: it enrolled again, got another password, and stops to
    // use it (the DaemonSet starts it again; here the test).
    await waitFor('the agent to stop for its new password', async () => (agent.out().includes('REDIS-CHANGED') ? true : undefined), 20_000);
    agent = startAgent('node-b', tokenB);
    await waitFor('the agent to start again', async () => (agent.out().includes('READY') ? true : undefined), 20_000);
    const after = (await enrol(tokenB, 'node-b')).answer!;
    expect(after.redis!.password).not.toBe(before.redis!.password);
    expect(await auth(after)).toBe('OK');

    await addJob('node-b', residual('node-b', 'old-keys-b'), receiverKeyOf(before));
    expect((await settled('node-b', 'old-keys-b')).failedReason).toMatch(/unknown-key.*generation 0 .*revoked/);
    const fresh = await receiverWork('node-b', 'pv-b2');
    await waitFor('work after the revoke to run', async () => (agent.out().includes(`RAN local-pv-placeholder ${fresh}`) ? true : undefined), 20_000);
    // The other replica learnt the new generation from Redis (it polls every GENERATIONS_POLL_MS) and seals with it.
    await new Promise((r) => setTimeout(r, 2 * GENERATIONS_POLL_MS));
    const viaReplica = await receiverWork('node-b', 'pv-b3', replica.url);
    await waitFor("the replica's work to run", async () => (agent.out().includes(`RAN local-pv-placeholder ${viaReplica}`) ? true : undefined), 20_000);
  }, 180_000);

  it('keeps the credentials of a node never revoked across a restart of the receiver, and a revoked one stays revoked', async () => {
    putNode('node-c');
    const tokenC = putAgentPod('node-c', 'agent-c');
    const c1 = (await enrol(tokenC, 'node-c')).answer!;
    const b1 = (await enrol('token-agent-b', 'node-b')).answer!;
    await replica?.close();
    replica = undefined;
    await receiver.close();
    receiver = await startReceiver(config, { operatorKubeConfig: ops.api.kubeConfig() });
    const c2 = (await enrol(tokenC, 'node-c')).answer!;
    expect(c2).toEqual(c1);
    expect(Object.keys(c2.keys).some((k) => k.includes('.g'))).toBe(false);
    expect(await auth(c2)).toBe('OK');
    expect((await enrol('token-agent-b', 'node-b')).answer).toEqual(b1);
    expect(await admin.hget(nodeGenerationKeys(prefix).generations, 'node-c')).toBeNull();
  });
});
