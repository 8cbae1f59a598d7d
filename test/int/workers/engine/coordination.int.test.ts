import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeCoordination } from '../../../../src/adapters/kube/kube-coordination.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import type { Mode } from '../../../../src/core/catalogue/result.ts';
import { ParkedError } from '../../../../workers/engine/gate.ts';
import type { RunbookContext } from '../../../../workers/engine/registry.ts';
import { runRunbook } from '../../../../workers/engine/run-runbook.ts';
import type { Plan, PlannedStep, RunbookDefinition } from '../../../../workers/engine/runbook.ts';
import { expectOk } from '../../../../workers/host/command-failed.ts';
import { uncoveredByRbac } from '../../../support/kube-objects.ts';
import { FakeHost } from '../../../testkit/fake-host.ts';
import { type FakeKubeApi, startFakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import type { LocalPvPlaceholderJob } from '../../../../src/core/catalogue/jobs.ts';

// Coordination against the fake API server (the node agent's REST client, as the agents read it):
// kured's lock naming the job's node, a drain of it and a medik8s remediation of it each hold a
// job before its destructive step (parked, reason coordination, nothing run on the host) and
// let it go on once they end; what cannot be read holds it as unknown.

const toyJob: LocalPvPlaceholderJob = {
  version: 1,
  key: 'lpv_test_0123456789ab',
  runbook: 'local-pv-placeholder',
  action: 'place',
  target: { node: 'worker-1', pv: 'pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};
const NODE = toyJob.target.node;
const KURED = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kured', namespace: 'kube-system' } };
const LOCK = 'weave.works/kured-node-lock';
const SNR = { apiVersion: 'self-node-remediation.medik8s.io/v1alpha1', kind: 'SelfNodeRemediation' };
const FAR = { apiVersion: 'fence-agents-remediation.medik8s.io/v1alpha1', kind: 'FenceAgentsRemediation' };

type Step = PlannedStep & { file: string };
const plan: Plan<Step> = {
  kind: 'steps',
  summary: 'wipe b',
  steps: [
    { id: 'make:a', description: 'make a', destructive: false, file: '/work/a' },
    {
      id: 'wipe:b',
      description: 'wipe b',
      destructive: true,
      file: '/work/b',
      evidence: [{ claim: 'b is ours', source: 'test', observedAt: new Date().toISOString(), status: 'holds' }],
    },
  ],
};
const toy: RunbookDefinition<'local-pv-placeholder', object, Step> = {
  runbook: 'local-pv-placeholder',
  observe: async () => ({}),
  plan: () => plan,
  steps: {
    isDone: async (s, host) => (await host.readFile(s.file)) !== null,
    async apply(s, host) {
      expectOk(await host.run(['touch-like', s.file]));
      await host.writeFile(s.file, 'x');
    },
  },
  verify: async () => ({ ok: true, checks: [{ what: 'toy', ok: true }] }),
};

let api: FakeKubeApi;
let host: FakeHost;
const acted: Array<string | undefined> = [];

const coordination = (server = api.url) =>
  new KubeCoordination({
    get: (path, query) => new KubeRest({ server, token: () => 'fake-token', timeoutMs: 2000 }).get(path, query),
    kured: { namespace: 'kube-system', name: 'kured' },
    medik8sNamespaces: [],
  });
const ctx = (mode: Mode, check = coordination()): RunbookContext => ({
  jobId: toyJob.key,
  attempt: 1,
  mode,
  ranOn: NODE,
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
  coordination: { check, recheckMs: 30_000 },
  acting: (node) => acted.push(node),
});
const run = (mode: Mode = 'enforce', check?: KubeCoordination) => runRunbook(toy, toyJob, ctx(mode, check), { host, stateDir: '/state' });
const parked = async (mode: Mode = 'enforce', check?: KubeCoordination): Promise<ParkedError> => {
  const err = await run(mode, check).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ParkedError);
  return err as ParkedError;
};
/** Whether the destructive step ran on the (fake) node. */
const wiped = () => host.commands.some((c) => c[0] === 'touch-like' && c[1] === '/work/b');

beforeEach(async () => {
  api = await startFakeKubeApi();
  api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: {} });
  api.put(KURED);
  host = new FakeHost().on(['touch-like'], { exitCode: 0 });
  acted.length = 0;
});
afterEach(async () => {
  // Every read coordination made is in both agents' RBAC lists (src/adapters/kube/rbac.ts).
  expect(uncoveredByRbac(api.requests, 'node-agent')).toEqual([]);
  expect(uncoveredByRbac(api.requests, 'cluster-worker')).toEqual([]);
  await api.close();
});

describe('a destructive step waits for another tool on its node', () => {
  it('while kured holds its reboot lock for the node, and goes on once kured released it', async () => {
    const value = JSON.stringify({ nodeID: NODE, metadata: { unschedulable: false }, created: new Date().toISOString(), TTL: 0 });
    api.put({ ...KURED, metadata: { ...KURED.metadata, annotations: { [LOCK]: value } } });
    const err = await parked();
    expect(err.parking).toMatchObject({ reason: 'coordination', why: expect.stringMatching(/^waiting for kured \(holds the reboot lock for worker-1: /) });
    expect(err.parking.until).toBeInstanceOf(Date);
    expect(err.result).toMatchObject({ outcome: 'waiting' });
    // The step before it ran; the destructive one did not, and the worker's gauge never went up.
    expect(host.commands.map((c) => c[1])).toEqual(['/work/a']);
    expect(wiped()).toBe(false);
    expect(acted).toEqual([]);

    api.put(KURED);
    const result = await run();
    expect(result.outcome).toBe('succeeded');
    expect(result.steps.map((s) => s.status)).toEqual(['skipped-already-done', 'done']);
    expect(wiped()).toBe(true);
    expect(acted).toEqual([NODE]);
  });

  it('not for a kured lock naming another node, nor where kured is not installed', async () => {
    const value = JSON.stringify({ nodeID: 'worker-2', metadata: { unschedulable: true }, created: new Date().toISOString(), TTL: 0 });
    api.put({ ...KURED, metadata: { ...KURED.metadata, annotations: { [LOCK]: value } } });
    expect((await run()).outcome).toBe('succeeded');
    api.remove('apps/v1', 'DaemonSet', 'kured', 'kube-system');
    expect(await coordination().busy(NODE)).toEqual({ busy: false });
  });

  it('while the node is cordoned and a pod on it terminates, and goes on once the drain has emptied it', async () => {
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { unschedulable: true } });
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db-0', namespace: 'shop', deletionTimestamp: new Date().toISOString() },
      spec: { nodeName: NODE },
    });
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'far', namespace: 'shop', deletionTimestamp: new Date().toISOString() },
      spec: { nodeName: 'worker-2' },
    });
    const err = await parked();
    expect(err.parking.why).toBe('waiting for drain (worker-1 is cordoned and 1 pod(s) on it are terminating: shop/db-0)');
    expect(wiped()).toBe(false);

    // Cordoned still, nothing terminating: not a drain.
    api.remove('v1', 'Pod', 'db-0', 'shop');
    expect((await run()).outcome).toBe('succeeded');
    expect(wiped()).toBe(true);
  });

  it('while a SelfNodeRemediation is named after the node (any namespace), and goes on once it is gone', async () => {
    api.put({ ...SNR, metadata: { name: NODE, namespace: 'medik8s' } });
    const err = await parked();
    expect(err.parking.why).toBe('waiting for medik8s (SelfNodeRemediation medik8s/worker-1 remediates worker-1)');
    expect(wiped()).toBe(false);

    api.remove(SNR.apiVersion, SNR.kind, NODE, 'medik8s');
    expect((await run()).outcome).toBe('succeeded');
    expect(wiped()).toBe(true);
  });

  it('while NodeHealthCheck made a FenceAgentsRemediation for the node under a generated name', async () => {
    api.put({ ...FAR, metadata: { name: `${NODE}-x7k2p`, namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': NODE } } });
    expect((await parked()).parking.why).toBe('waiting for medik8s (FenceAgentsRemediation medik8s/worker-1-x7k2p remediates worker-1)');
  });

  it('only in the namespaces MEDIK8S_NAMESPACES names, when it names some', async () => {
    api.put({ ...SNR, metadata: { name: NODE, namespace: 'elsewhere' } });
    const only = (namespaces: string[]) =>
      new KubeCoordination({
        get: (path, query) => new KubeRest({ server: api.url, token: () => 'fake-token' }).get(path, query),
        kured: { namespace: 'kube-system', name: 'kured' },
        medik8sNamespaces: namespaces,
      });
    expect(await only(['medik8s']).busy(NODE)).toEqual({ busy: false });
    expect(await only(['medik8s', 'elsewhere']).busy(NODE)).toMatchObject({ busy: true, who: 'medik8s' });
  });

  it('not where the medik8s API groups are not installed (404)', async () => {
    api.absentGroups.add('self-node-remediation.medik8s.io');
    api.absentGroups.add('fence-agents-remediation.medik8s.io');
    expect((await run()).outcome).toBe('succeeded');
    expect(wiped()).toBe(true);
  });

  it('while an answer is an error (503): unknown means wait, never act', async () => {
    api.failNext(/selfnoderemediations/, 503);
    const err = await parked();
    expect(err.parking).toMatchObject({
      reason: 'coordination',
      why: expect.stringMatching(/^waiting: whether another tool acts on worker-1 is unknown \(SelfNodeRemediations could not be listed: .*HTTP 503/),
    });
    expect(wiped()).toBe(false);
    expect((await run()).outcome).toBe('succeeded');
  });

  it('while the API server cannot be reached at all', async () => {
    const gone = await startFakeKubeApi();
    const url = gone.url;
    await gone.close();
    const err = await parked('enforce', coordination(url));
    expect(err.parking).toMatchObject({ reason: 'coordination', why: expect.stringContaining('is unknown (') });
    expect(err.parking.why).toMatch(/kured's lock on daemonset kube-system\/kured could not be read/);
    expect(wiped()).toBe(false);
  });

  it('dry-run changes nothing and notes on the step what enforce would wait for', async () => {
    api.put({ ...SNR, metadata: { name: NODE, namespace: 'medik8s' } });
    const result = await run('dry-run');
    expect(result.outcome).toBe('planned');
    expect(result.steps[0]?.waitsFor).toBeUndefined();
    expect(result.steps[1]).toMatchObject({
      id: 'wipe:b',
      status: 'would-run',
      waitsFor: 'waiting for medik8s (SelfNodeRemediation medik8s/worker-1 remediates worker-1); enforce waits and looks again every 30 s',
    });
    expect(host.commands).toEqual([]);
  });
});
