import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys, queueControlKeys } from '../../../../src/core/controls/redis-keys.ts';
import type { Config } from '../../../../src/core/config/schema.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { connect, scanKeys, whenReady } from '../../../../src/adapters/redis/redis.ts';
import { NoAgentWatch } from '../../../../workers/cluster-worker/no-agent-watch.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { IncidentIndex, incidentIndexKey } from '../../../../src/adapters/jobstore/incident-index.ts';
import type { RunbookWorker } from '../../../../workers/engine/runbook-worker.ts';
import { createNodeAgent } from '../../../../workers/node-agent/agent.ts';
import { breakerContract } from '../../../support/breaker-contract.ts';
import { testConfig } from '../../../support/config.ts';
import { fastControls, toyRunbook, type ToyStep } from '../../../support/controls-harness.ts';
import { alertmanagerBody, getJson, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefixOn, uniquePrefix } from '../../../support/redis.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { startCluster, topologiesAvailable, type LocalCluster } from '../../../support/redis-topology.ts';
import { waitFor } from '../../../support/wait.ts';

// volume-medic on a real 3-master Redis Cluster started by this test (redis-server
// --cluster-enabled, redis-cli --cluster create): every BullMQ script, the batch add, the
// breakers and the controls must touch one slot each, or Redis answers CROSSSLOT. Jobs go in
// through the real receiver and are run by real node agents; a pause and an approval work as on
// a single Redis; the breakers' contract runs as it does against one server.

const silent = createLogger('test', 'silent');
const TOKEN = 'cluster-test-token-0123456789';
const skip = topologiesAvailable();

const step = (id: string, extra: Partial<ToyStep> = {}): ToyStep => ({
  id,
  description: `toy ${id}`,
  destructive: true,
  file: `/w/${id}`,
  evidence: [{ claim: `${id} is safe to change`, source: 'toy', observedAt: new Date().toISOString(), status: 'holds' }],
  ...extra,
});

describe.skipIf(skip)('a 3-master Redis Cluster', () => {
  let cluster: LocalCluster;
  let admin: Cluster;
  const prefix = uniquePrefix('cluster');
  let receiver: Receiver;
  const agents: RunbookWorker[] = [];
  const base = (over: Partial<Config> = {}): Config =>
    testConfig({
      redisClusterNodes: cluster.nodes.map((n) => `${n.host}:${n.port}`),
      queuePrefix: prefix,
      tokens: [TOKEN],
      ...fastControls,
      ...over,
    });

  let ops: Operators;

  beforeAll(async () => {
    cluster = await startCluster();
    admin = new Cluster(cluster.nodes);
    ops = await startOperators();
    receiver = await startReceiver(base({ breakerNodeDestructivePerHour: 3 }), { operatorKubeConfig: ops.api.kubeConfig() });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await receiver?.close();
    await ops?.close();
    if (admin) {
      await dropPrefixOn(admin, prefix);
      admin.disconnect();
    }
    cluster?.stop();
  });

  const api = (path: string, body: unknown = {}) => post(`${receiver.url}${path}`, body, ops.token('oncall'));
  const get = (path: string) => getJson(`${receiver.url}${path}`, ops.token('reader'));
  const job = (id: string) => get(`/v1/jobs/${id}`);
  const until = (id: string, pred: (j: any) => boolean, what: string, ms?: number) =>
    waitFor(
      what,
      async () => {
        const j = await job(id);
        return pred(j) ? j : undefined;
      },
      ms,
    );
  const agent = (node: string, registry: ReturnType<typeof toyRunbook>['registry'], over: Partial<Config> = {}) => {
    const a = createNodeAgent({ config: base({ nodeName: node, ...over }), registry, log: silent });
    agents.push(a);
    return a;
  };
  let n = 0;
  const newJob = async (node: string): Promise<string> => {
    n += 1;
    const r = await post(
      `${receiver.url}/v1/alertmanager`,
      alertmanagerBody([nodeNotReadyAlert(node, 'resolved', `fp${n}x${node.replace(/[^a-z0-9]/g, '')}`)]),
      TOKEN,
    );
    expect(r.status).toBe(202);
    return r.json.accepted[0].id;
  };

  it("stores one webhook's jobs for many nodes across every master (a call per queue), and agents run theirs", async () => {
    const nodes = Array.from({ length: 24 }, (_, i) => `cl-node-${i}`);
    const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody(nodes.map((node) => nodeNotReadyAlert(node, 'resolved'))), TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toHaveLength(24);
    expect(r.json.accepted.map((a: any) => a.queue).sort()).toEqual(nodes.map(nodeQueueName).sort());
    // Each queue's keys hash by its tag: the 24 queues landed on all three masters.
    const mastersWithQueues = await Promise.all(
      admin.nodes('master').map(async (m) => {
        let count = 0;
        for await (const keys of scanKeys(m, `${prefix}:vm-node-*:meta`)) count += keys.length;
        return count;
      }),
    );
    expect(mastersWithQueues.reduce((a, b) => a + b, 0)).toBe(24);
    expect(mastersWithQueues.every((c) => c > 0)).toBe(true);
    // The console's index (one key, its own slot) has every new job, written in a call of its own.
    await waitFor('the incident index has the 24 jobs', async () => ((await admin.zcard(incidentIndexKey(prefix))) >= 24 ? true : undefined));
    // A repeat of the same webhook folds into the stored jobs.
    const again = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody(nodes.map((node) => nodeNotReadyAlert(node, 'resolved'))), TOKEN);
    expect(again.json.accepted.every((a: any) => a.deduplicated)).toBe(true);

    const toy = toyRunbook((node) => ({ kind: 'steps', summary: 'one file', steps: [step(`run-${node}`, { destructive: false })] }));
    for (const node of nodes.slice(0, 3)) agent(node, toy.registry);
    for (const a of r.json.accepted.slice(0, 3)) {
      const done = await until(a.id, (j) => j.state === 'completed', `job of ${a.node} completed`);
      expect(done.result).toMatchObject({ outcome: 'planned', ranOn: a.node });
    }
    // The jobs API reads every queue, wherever its slot lives.
    const listed = await get('/v1/jobs?limit=100');
    expect(listed.jobs.length).toBeGreaterThanOrEqual(24);
    // The console's fleet scan (a script call per queue here: one slot each) and its index lookups.
    const fleet = await get('/v1/fleet?show=all&sort=node&limit=100');
    const rows = new Map<string, { open: number; completed: number; agent: string }>(fleet.rows.map((r: any) => [r.node, r]));
    for (const node of nodes.slice(0, 3)) expect(rows.get(node)).toMatchObject({ open: 0, completed: 1, agent: 'seen' });
    for (const node of nodes.slice(3)) expect(rows.get(node)).toMatchObject({ open: 1, agent: 'missing' });
    expect(fleet.agentsMissing).toBe(21);
    expect((await get('/v1/summary')).counts).toMatchObject({ waiting: 21, completed: 3 });
    const index = new IncidentIndex(admin, prefix);
    expect(await index.locate(r.json.accepted[5].id)).toMatchObject({ queue: nodeQueueName(nodes[5]!), node: nodes[5] });
    expect((await index.ofNode(nodes[7]!, 10)).map((e) => e.id)).toEqual([r.json.accepted[7].id]);
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    expect(metrics).toMatch(/volume_medic_jobs_finished_total\{runbook="residual-multipath-cleanup",outcome="planned"\} 3/);
    expect(await getJson(`${receiver.url}/readyz`)).toMatchObject({ status: 'ready', redis: 'ok' });
  });

  it('finds the jobs no agent takes on queues of every master, and fails them the supported way, one slot per script', async () => {
    // After the test above: 21 of the cl-node-* queues hold a job, and no agent serves them.
    let offset = 0;
    const target = { kind: 'cluster' as const, nodes: cluster.nodes };
    const redis = connect(target, 'producer');
    const watch = new NoAgentWatch({
      redis,
      prefix,
      graceMs: 60_000,
      deadlineMs: 300_000,
      intervalMs: 30_000,
      log: silent,
      workerConnection: () => connect(target, 'worker'),
      now: () => Date.now() + offset,
    });
    try {
      await whenReady(redis, 10_000);
      offset = 61_000;
      const found = await watch.check();
      const lost = [...found.stranded.keys()].filter((q) => q.startsWith('vm-node-{cl-node-')).sort();
      expect(lost).toEqual(Array.from({ length: 21 }, (_, i) => nodeQueueName(`cl-node-${i + 3}`)).sort());
      offset = 301_000;
      const late = await watch.check();
      const failed = late.failed.filter((id) => id.includes('cl-node-'));
      expect(failed).toHaveLength(21);
      expect(await job(failed[0]!)).toMatchObject({ state: 'failed', failedReason: expect.stringMatching(/^no node agent: /) });
    } finally {
      await watch.close();
      redis.disconnect();
    }
  });

  it("holds a node's job while it is paused and releases it on resume", async () => {
    const toy = toyRunbook((node) => ({ kind: 'steps', summary: 'one file', steps: [step(`p-${node}`, { destructive: false })] }));
    agent('cl-paused', toy.registry);
    expect((await api('/v1/pause', { node: 'cl-paused', why: 'SAN firmware upgrade' })).status).toBe(200);
    const id = await newJob('cl-paused');
    const held = await until(id, (j) => j.progress?.parked?.reason === 'paused', 'job held by the pause');
    expect(held.progress.parked.why).toMatch(/node cl-paused paused by oncall/);
    expect((await get('/v1/controls')).parked.map((p: any) => p.jobId)).toContain(id);
    await api('/v1/resume', { node: 'cl-paused' });
    await until(id, (j) => j.state === 'completed', 'job released by resume', 10_000);
    expect((await get('/v1/controls/audit')).audit.map((e: any) => e.action)).toEqual(expect.arrayContaining(['pause', 'resume']));
  });

  it("keeps a node agent on its own queue's master: a pause read from its queue's copy, breaker slots through the receiver", async () => {
    const toy = toyRunbook((node) => ({ kind: 'steps', summary: 'one file', steps: [step(`s-${node}`, { destructive: false })] }));
    // With ENROL_URL the receiver takes its breaker slots, as for an enrolled agent.
    agent('cl-slot', toy.registry, { enrolUrl: receiver.url });
    expect((await api('/v1/pause', { why: 'fleet-wide hold' })).status).toBe(200);
    try {
      const id = await newJob('cl-slot');
      const held = await until(id, (j) => j.progress?.parked?.reason === 'paused', 'job held by the cluster-wide pause');
      expect(held.progress.parked.why).toMatch(/cluster-wide pause by oncall/);
      // The receiver made this new node's copy before its first job, and put the pause in it.
      const copy = await admin.hgetall(queueControlKeys(prefix, nodeQueueName('cl-slot')).controls);
      expect(copy['pause|cluster']).toBe(await admin.hget(controlKeys(prefix).pause, 'cluster'));
      expect(Number(copy['synced'])).toBeGreaterThan(Date.now() - 60_000);
    } finally {
      await api('/v1/resume', {});
    }
    await waitFor('the held job completed after the resume', async () =>
      (await get('/v1/jobs?limit=200')).jobs.some((j: any) => j.node === 'cl-slot' && j.state === 'completed') ? true : undefined,
    );
    // Every connection of this agent (its command one, named; BullMQ's blocking one, named after
    // the queue) is on the master of its queue's slot, and on no other.
    const blockingName = `${prefix}:${Buffer.from(nodeQueueName('cl-slot')).toString('base64')}`;
    const holding = await Promise.all(
      admin.nodes('master').map(async (m) => {
        const names = [...String(await m.client('LIST')).matchAll(/ name=(\S*) /g)].map((x) => x[1]!);
        const mine = names.filter((n) => n === 'volume-medic:node-agent.cl-slot:worker' || n === blockingName).length;
        let queueKeys = 0;
        for await (const keys of scanKeys(m, `${prefix}:vm-node-{cl-slot}:meta`)) queueKeys += keys.length;
        return { mine, queueKeys };
      }),
    );
    expect(holding.filter((h) => h.mine > 0)).toEqual([{ mine: 2, queueKeys: 1 }]);
  });

  it('parks a high-risk step for approval, and runs it once approved', async () => {
    const plan = { kind: 'steps' as const, summary: 'release then flush', steps: [step('release', { risk: 'high' }), step('flush')] };
    const toy = toyRunbook(() => plan);
    agent('cl-approve', toy.registry, { runbookModes: { 'residual-multipath-cleanup': 'enforce' } });
    const id = await newJob('cl-approve');
    await until(id, (j) => j.progress?.parked?.reason === 'approval', 'job parked for approval');
    expect((await get('/v1/approvals')).approvals.map((a: any) => a.jobId)).toContain(id);
    expect(await toy.ran('/w/release')).toBe(false);
    const ok = await api(`/v1/jobs/${id}/approve`, { why: 'checked by hand' });
    expect(ok.json).toMatchObject({ state: 'approved', decidedBy: 'oncall' });
    const done = await until(id, (j) => j.state === 'completed', 'job completed after approval');
    expect(done.result.outcome).toBe('succeeded');
    expect(await toy.ran('/w/flush')).toBe(true);
    // Both destructive steps took their breaker slots (one script, one slot).
    const breakers = (await get('/v1/breakers')).breakers;
    expect(breakers.find((b: any) => b.name === 'node/cl-approve')).toMatchObject({ count: 2 });
    expect((await api(`/v1/jobs/${id}/approve`)).status).toBe(409);
  });

  describe('breakers', () => {
    breakerContract('cluster', async () => {
      const c = connect({ kind: 'cluster', nodes: cluster.nodes }, 'producer');
      await whenReady(c, 10_000);
      return c;
    });
  });
});
