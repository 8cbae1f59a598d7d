import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { finishedExposition } from '../../../../src/adapters/stats/job-stats.ts';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { ControlsStore } from '../../../../src/adapters/controls/controls-store.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { EnrolAnswer, ringOfAnswer } from '../../../../src/core/trust/enrolment-wire.ts';
import type { Keyring } from '../../../../src/core/trust/keyring.ts';
import type { Role } from '../../../../src/core/trust/roles.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob, verifyJobSeal } from '../../../../src/core/trust/work.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { podTokenUser, startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { rawQueue, type RawQueue } from '../../../support/raw-jobs.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// Issue 30, attack 1 (work): an agent holds only its own node's work keys, handed out at
// enrolment against its pod's projected service-account token (TokenReview through the wire fake
// of the API server). Everything node A's agent holds, used every way a forger could, seals no
// work that node B's agent (a real, enrolled agent process) runs: refused, audited and counted;
// work the receiver seals for node B runs. And the receiver hands node A's keys to node A's pod only.

const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const CW_SA = `${NS}/volume-medic-cluster-worker`;
const TOKEN = 'webhook-token-enrolment';
const DAY = 86_400_000;

const agentUser = (node: string | undefined, pod: string, uid: string, serviceAccount = AGENT_SA) =>
  podTokenUser({ serviceAccount, pod, uid, ...(node ? { node } : {}) });

const residual = (node: string, key: string): RemediationJob => ({
  version: 1,
  key,
  runbook: 'residual-multipath-cleanup',
  target: { node },
  evidence: [{ source: 'alertmanager', summary: 'KubeNodeNotReady resolved', raw: { n: 1 } }],
});

describe("enrolment: each agent holds its own node's work keys only", () => {
  const prefix = uniquePrefix('enrol');
  const files = writeControlKeys();
  let api: FakeKubeApi;
  let receiver: Receiver;
  let redis: Redis;

  const enrol = async (token: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${receiver.url}/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    api = await startFakeKubeApi();
    api.addUser('token-a', agentUser('node-a', 'agent-a', 'uid-a'));
    api.addUser('token-b', agentUser('node-b', 'agent-b', 'uid-b'));
    api.addUser('token-old', agentUser(undefined, 'agent-old', 'uid-old'));
    api.addUser('token-gone', agentUser(undefined, 'agent-gone', 'uid-gone-2'));
    api.addUser('token-cw', agentUser(undefined, 'cw-1', 'uid-cw', CW_SA));
    api.addUser('token-other', agentUser('node-a', 'web-1', 'uid-web', `${NS}/default`));
    api.addUser('token-apiserver-audience', { ...agentUser('node-a', 'agent-a', 'uid-a'), audiences: ['https://kubernetes.default.svc'] });
    api.addUser('token-unbound', { username: `system:serviceaccount:${AGENT_SA.replace('/', ':')}`, audiences: ['volume-medic'] });
    // Enrolment hands out credentials only for a Node the API server has, to a pod that still exists.
    for (const name of ['node-a', 'node-b', 'node-old']) api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    for (const [name, uid, nodeName] of [
      ['agent-a', 'uid-a', 'node-a'],
      ['agent-b', 'uid-b', 'node-b'],
      ['agent-b2', 'uid-b2', 'node-b'],
      ['cw-1', 'uid-cw', 'node-x'],
    ] as const)
      api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, uid }, spec: { nodeName } });
    api.addUser('token-b2', agentUser('node-b', 'agent-b2', 'uid-b2'));
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'agent-old', namespace: NS, uid: 'uid-old' },
      spec: { nodeName: 'node-old' },
    });
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'agent-gone', namespace: NS, uid: 'uid-gone-1' },
      spec: { nodeName: 'node-old' },
    });
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        tokens: [TOKEN],
        operatorAuth: 'off',
        enrolNodeAgents: [AGENT_SA],
        enrolClusterWorkers: [CW_SA],
        controlSigningKeyFile: files.keyFile,
        controlVerifyCertFile: files.certFile,
      }),
      { operatorKubeConfig: api.kubeConfig() },
    );
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it("gives a node agent its own queue's keys of every issuer, which check what the receiver seals for that node only", async () => {
    const r = await enrol('token-a', { as: 'node-agent', node: 'node-a' });
    expect(r.status).toBe(200);
    const a = EnrolAnswer.parse(r.json);
    expect(a.queue).toBe(nodeQueueName('node-a'));
    // Recorded by the receiver, so readers of every queue's parked jobs and audit entries see
    // a queue it never put a job on (the agent's own checks), without the agent writing the registry.
    expect(await redis.sismember(knownQueuesKey(prefix), nodeQueueName('node-a'))).toBe(1);
    expect(Object.keys(a.keys).sort()).toEqual(['cluster-worker.test', 'node-agent.test', 'receiver.test']);
    expect(a.signing).toBe('node-agent.test');
    const ring = ringOfAnswer(a);
    const now = Date.now();
    const forA = sealJob(testSealer('receiver'), nodeQueueName('node-a'), residual('node-a', 'ja'), DAY);
    const forB = sealJob(testSealer('receiver'), nodeQueueName('node-b'), residual('node-b', 'jb'), DAY);
    expect(verifyJobSeal(ring, nodeQueueName('node-a'), 'ja', forA, now)).toMatchObject({ ok: true });
    expect(verifyJobSeal(ring, nodeQueueName('node-b'), 'jb', forB, now)).toMatchObject({
      ok: false,
      reason: 'unknown-key',
      detail: expect.stringContaining('node-a'),
    });
    // Another node's keys are other keys: nothing of A's is B's.
    const b = EnrolAnswer.parse((await enrol('token-b', { as: 'node-agent', node: 'node-b' })).json);
    for (const name of Object.keys(a.keys)) expect(b.keys[name]).not.toBe(a.keys[name]);
    // The fleet view knows both nodes from their enrolment (the receiver records them; agents may not).
    expect(await redis.smembers(knownQueuesKey(prefix))).toEqual(expect.arrayContaining([nodeQueueName('node-a'), nodeQueueName('node-b')]));
  });

  it("refuses a node agent that asks for another node's keys, a wrong account, an unbound token and a bad one", async () => {
    expect(await enrol('token-a', { as: 'node-agent', node: 'node-b' })).toMatchObject({
      status: 403,
      json: { error: expect.stringContaining('runs on node node-a') },
    });
    expect(await enrol('token-a', { as: 'cluster-worker' })).toMatchObject({ status: 403 });
    expect(await enrol('token-other', { as: 'node-agent', node: 'node-a' })).toMatchObject({
      status: 403,
      json: { error: expect.stringContaining('may not enrol') },
    });
    expect(await enrol('token-unbound', { as: 'node-agent', node: 'node-a' })).toMatchObject({
      status: 403,
      json: { error: expect.stringContaining('not bound to a pod') },
    });
    expect(await enrol('token-apiserver-audience', { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 401 });
    expect(await enrol('no-such-token', { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 401 });
    expect(await enrol(undefined, { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 401 });
    // A webhook token is no enrolment token.
    expect(await enrol(TOKEN, { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 401 });
    expect(await enrol('token-a', { as: 'node-agent' })).toMatchObject({ status: 400 });
  });

  it('takes the node from the pod when the token names none, and refuses a token whose pod was replaced', async () => {
    const r = await enrol('token-old', { as: 'node-agent', node: 'node-old' });
    expect(r.status).toBe(200);
    expect(EnrolAnswer.parse(r.json).queue).toBe(nodeQueueName('node-old'));
    expect(await enrol('token-gone', { as: 'node-agent', node: 'node-old' })).toMatchObject({
      status: 403,
      json: { error: expect.stringContaining('gone') },
    });
  });

  it("gives the cluster worker the receiver's key of its own queue and nothing else", async () => {
    const r = await enrol('token-cw', { as: 'cluster-worker' });
    expect(r.status).toBe(200);
    const a = EnrolAnswer.parse(r.json);
    expect(a.queue).toBe(CLUSTER_QUEUE);
    expect(Object.keys(a.keys)).toEqual(['receiver.test']);
    expect(a.signing).toBeUndefined();
  });

  it("reviews a pod's token once, however often it enrols, but gives nothing once its pod is gone", async () => {
    const before = api.requestsTo('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length;
    for (let i = 0; i < 5; i++) expect((await enrol('token-b', { as: 'node-agent', node: 'node-b' })).status).toBe(200);
    expect(api.requestsTo('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length).toBe(before);
    // A cached review stands for the TokenReview, not for the pod's life (issue 44, item 5).
    expect((await enrol('token-b2', { as: 'node-agent', node: 'node-b' })).status).toBe(200);
    api.remove('v1', 'Pod', 'agent-b2', NS);
    expect(await enrol('token-b2', { as: 'node-agent', node: 'node-b' })).toMatchObject({
      status: 403,
      json: { error: `pod ${NS}/agent-b2 of the token is gone` },
    });
  });

  it('refuses a node the API server does not know, whatever its token says', async () => {
    api.addUser('token-ghost', agentUser('node-ghost', 'agent-ghost', 'uid-ghost'));
    api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'agent-ghost', namespace: NS, uid: 'uid-ghost' }, spec: { nodeName: 'node-ghost' } });
    expect(await enrol('token-ghost', { as: 'node-agent', node: 'node-ghost' })).toMatchObject({
      status: 403,
      json: { error: expect.stringContaining('node node-ghost is not known to the API server') },
    });
  });

  it('refuses a cross-site form post', async () => {
    const res = await fetch(`${receiver.url}/v1/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: 'Bearer token-a', 'sec-fetch-site': 'cross-site' },
      body: '{"as":"node-agent","node":"node-a"}',
    });
    expect(res.status).toBe(403);
  });

  describe('a real enrolled agent of node-b', () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'vm-enrol-state-'));
    const tokenFile = join(mkdtempSync(join(tmpdir(), 'vm-enrol-token-')), 'token');
    const queueB = nodeQueueName('node-b');
    let queue: RawQueue;
    let jobs: TestJobs;
    let agent: ChildProcess;
    let out = '';

    beforeAll(async () => {
      writeFileSync(tokenFile, 'token-b\n');
      queue = rawQueue(redis, prefix, queueB);
      jobs = testJobs(redis, prefix);
      agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
        env: {
          ...process.env,
          REDIS_URL: redisUrl(),
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
      await waitFor('the agent to enrol and start', async () => (out.includes('READY') ? true : undefined), 20_000);
    });
    afterAll(async () => {
      agent?.kill('SIGKILL');
      await queue?.close();
      await jobs?.close();
    });

    const settled = (id: string) =>
      waitFor(
        `job ${id} to finish`,
        async () => {
          const j = await jobs.get(queue.name, id);
          return j && (j.finishedOn ?? 0) > 0 ? j : undefined;
        },
        15_000,
      );

    it('runs work the receiver sealed for node-b', async () => {
      await queue.add('residual-multipath-cleanup', sealJob(testSealer('receiver'), queueB, residual('node-b', 'b-valid'), DAY), {
        jobId: 'b-valid',
      });
      expect((await settled('b-valid')).returnvalue).toMatchObject({ outcome: 'nothing-to-do' });
      expect(out).toContain('RAN residual-multipath-cleanup b-valid');
    });

    it('refuses work sealed with everything node-a holds, every way, and audits and counts it', async () => {
      const a = EnrolAnswer.parse((await enrol('token-a', { as: 'node-agent', node: 'node-a' })).json);
      // Each of A's keys, used as B's queue key outright and as a root to derive B's from.
      const forgers: Array<[string, Keyring]> = Object.entries(a.keys).flatMap(([name, b64]): Array<[string, Keyring]> => {
        const role = name.slice(0, name.indexOf('.')) as Role;
        const key = Buffer.from(b64, 'base64');
        const signing = { role, kid: name.slice(name.indexOf('.') + 1), key };
        return [
          [`${name}-as-key`, { verify: new Map([[name, key]]), signing, scope: queueB }],
          [`${name}-as-root`, { verify: new Map([[name, key]]), signing }],
        ];
      });
      expect(forgers).toHaveLength(6);
      for (const [i, [how, ring]] of forgers.entries()) {
        const id = `forged-${i}`;
        await queue.add('residual-multipath-cleanup', sealJob(sealerOf(ring)!, queueB, residual('node-b', id), DAY), {
          jobId: id,
          attempts: 3,
        });
        const j = await settled(id);
        expect(j.failedReason, how).toMatch(/untrusted work refused \(bad-mac\)/);
        expect(j.attemptsMade).toBe(1);
        expect(out).not.toContain(` ${id} `);
      }
      const audit = await new ControlsStore(redis, prefix).auditLog(200);
      expect(audit.filter((e) => e.action === 'work-refused' && e.by === 'node-b' && e.target.startsWith('job/forged-'))).toHaveLength(6);
      expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="job",reason="bad-mac"\} 6/);
    });
  });
});

/** POST /v1/enrol from `localAddress` (any of 127/8 is this host: each its own failed-auth budget). */
function enrolFrom(url: string, localAddress: string, token: string, body: unknown): Promise<{ status: number; retryAfter?: string }> {
  const u = new URL('/v1/enrol', url);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent: false,
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ...(res.headers['retry-after'] ? { retryAfter: res.headers['retry-after'] } : {}) }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

// Issue 44: every enrolment refusal costs the API server a TokenReview (refusals are not
// remembered), and any pod can present its own service account's token. Refusals spend the
// address's failed-auth budget (AUTH_FAILURES_PER_MINUTE, here 3); once it is spent the address
// gets 429 and the API server hears nothing more of it, however many requests it sends at once.
describe('enrolment refusals are limited per address', () => {
  const prefix = uniquePrefix('enrol-limit');
  let api: FakeKubeApi;
  let receiver: Receiver;
  const reviews = () => api.requestsTo('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length;

  beforeAll(async () => {
    api = await startFakeKubeApi();
    api.addUser('token-a', agentUser('node-a', 'agent-a', 'uid-a'));
    api.addUser('token-b', agentUser('node-b', 'agent-b', 'uid-b'));
    // Any pod's own token: the API server accepts it, its account may not enrol.
    api.addUser('token-web', agentUser('node-a', 'web-1', 'uid-web', `${NS}/default`));
    // Enrolment answers only for a Node the API server has, to a pod that still exists.
    for (const name of ['node-a', 'node-b']) api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    for (const [name, uid, nodeName] of [
      ['agent-a', 'uid-a', 'node-a'],
      ['agent-b', 'uid-b', 'node-b'],
    ] as const)
      api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, uid }, spec: { nodeName } });
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        operatorAuth: 'off',
        enrolNodeAgents: [AGENT_SA],
        authFailuresPerMinute: 3,
      }),
      { operatorKubeConfig: api.kubeConfig() },
    );
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
    await dropPrefix(prefix);
  });

  it('answers 429 with Retry-After once an address has spent its budget, without asking the API server; a legitimate agent still enrols', async () => {
    // Under the limit, a legitimate enrolment is answered (and spends nothing).
    expect(await enrolFrom(receiver.url, '127.0.7.1', 'token-a', { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 200 });
    const before = reviews();
    for (let i = 0; i < 3; i++)
      expect(await enrolFrom(receiver.url, '127.0.7.1', 'token-web', { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 403 });
    expect(reviews()).toBe(before + 3);
    const limited = await enrolFrom(receiver.url, '127.0.7.1', 'token-web', { as: 'node-agent', node: 'node-a' });
    expect(limited.status).toBe(429);
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect(await enrolFrom(receiver.url, '127.0.7.1', 'no-such-token', { as: 'node-agent', node: 'node-a' })).toMatchObject({ status: 429 });
    expect(reviews()).toBe(before + 3);
    // Another address (another pod) is not held back by it.
    expect(await enrolFrom(receiver.url, '127.0.7.2', 'token-b', { as: 'node-agent', node: 'node-b' })).toMatchObject({ status: 200 });
  });

  it('lets concurrent refusals from one address cost no more TokenReviews than its budget', async () => {
    const before = reviews();
    // Distinct unknown tokens (no review shared), all sent at once.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => enrolFrom(receiver.url, '127.0.8.1', `guess-${i}`, { as: 'node-agent', node: 'node-a' })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(17);
    expect(reviews() - before).toBe(3);
  });
});
