import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import type { RunbookResult } from '../../../../src/core/catalogue/result.ts';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import { realSleep } from '../../../../src/adapters/kube/supervised-informer.ts';
import { remediationsApi } from '../../../../src/adapters/kube/volume-medic-remediations.ts';
import { BullJobStore } from '../../../../src/adapters/jobstore/bull-job-store.ts';
import { BullJobWithdrawal } from '../../../../src/adapters/jobstore/job-withdrawal.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { consumeJobs } from '../../../../src/adapters/jobstore/consumer.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { PermanentError } from '../../../../src/core/errors.ts';
import type { JobConsumer, JobHandler } from '../../../../src/core/jobs/job-store.ts';
import { startKubeWatches, type KubeWatches } from '../../../../src/control/watches/kube-watches.ts';
import { remediationJobKey } from '../../../../src/control/triage/node-healthcheck.ts';
import { startFakeKubeApi, type FakeKubeApi, type RecordedRequest } from '../../../testkit/fake-kube-api.ts';
import { allows } from '../../../../src/adapters/kube/rbac.ts';
import { crdValidator } from '../../../testkit/crd-schema.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { apiCallOf, node } from '../../../support/kube-objects.ts';
import { find, rendered } from '../../../support/manifests.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testSealer } from '../../../support/trust.ts';

// NodeHealthCheck's escalation against the real client on the fake list/watch API server and a
// real Redis: a VolumeMedicRemediation (as NHC makes it: in its template's namespace, named after
// the node, the node-name annotation, owned by the NodeHealthCheck) becomes one sealed
// residual-multipath-cleanup job through triage and ingest; its status, validated against the
// chart's CRD schema on every write, follows the job; deleting it withdraws a job not yet started.

const API_VERSION = 'volume-medic.io/v1alpha1';
const KIND = 'VolumeMedicRemediation';
const COLLECTION = 'apis/volume-medic.io/v1alpha1/volumemedicremediations';
const NS = 'openshift-workload-availability';
const BOOT = '0b6f4c8e-3d2a-4e71-9a55-2f1c7d9e8b40';

type Obj = Record<string, any>;
const allRequests: RecordedRequest[] = [];

/** The call as RBAC sees it, a subresource included (`volumemedicremediations/status`), which apiCallOf leaves out. */
async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What NHC creates from a VolumeMedicRemediationTemplate for `nodeName` (node-healthcheck-operator resources/manager.go). */
const remediation = (nodeName: string, extra: Obj = {}): Obj => ({
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: {
    name: nodeName,
    namespace: NS,
    annotations: { 'remediation.medik8s.io/node-name': nodeName, 'remediation.medik8s.io/template-name': 'volume-medic-first', ...extra['annotations'] },
    labels: { 'app.kubernetes.io/part-of': 'node-healthcheck-controller' },
    ownerReferences: [
      { apiVersion: 'remediation.medik8s.io/v1alpha1', kind: 'NodeHealthCheck', name: 'nhc-worker', uid: 'b4c0c2a1-6a57-4d8e-8a0f-3c2b1d0e9f88' },
    ],
  },
  spec: { runbook: 'residual-multipath-cleanup' },
});

const result = (outcome: RunbookResult['outcome'], summary: string): RunbookResult => ({
  runbook: 'residual-multipath-cleanup',
  mode: 'enforce',
  outcome,
  summary,
  facts: {},
  plan: {},
  refusals: [],
  steps: [],
  commands: [],
  ranOn: 'worker-1',
});

describe('VolumeMedicRemediation objects (NodeHealthCheck) against a list/watch API server', () => {
  let api: FakeKubeApi;
  let redis: Redis;
  /** The agent's side: BullMQ workers want a connection that blocks. */
  let agentRedis: Redis;
  let dispatcher: Dispatcher;
  let prefix: string;
  let stored: TestJobs;
  const running: KubeWatches[] = [];
  const consumers: JobConsumer[] = [];

  const start = async (): Promise<KubeWatches> => {
    const w = await startKubeWatches({
      kubeConfig: api.kubeConfig(),
      ingest: { lookups: new KubeLookups(kubeClients(api.kubeConfig())), dispatcher, corroborate: true },
      sleep: (ms, signal) => realSleep(Math.min(ms, 50), signal),
      backoff: { initialMs: 100, maxMs: 400 },
      reconcileIntervalMs: 0,
      nodes: false,
      eventReasons: [],
      remediations: {
        api: remediationsApi(api.kubeConfig()),
        jobs: new BullJobStore({ redis, prefix, queue: (n) => dispatcher.queue(n) }),
        withdrawal: new BullJobWithdrawal((n) => dispatcher.queue(n)),
        resyncMs: 50,
      },
    });
    running.push(w);
    await until('the watch listed and connected', () => w.state().ready);
    return w;
  };
  const jobs = (n: string) => stored.list(nodeQueueName(n), ['waiting', 'delayed', 'active', 'completed', 'failed']);
  const statusOf = (name: string): Obj | undefined => api.get(API_VERSION, KIND, name, NS)?.['status'];
  const condition = (name: string, type: string): Obj | undefined => (statusOf(name)?.['conditions'] as Obj[] | undefined)?.find((c) => c['type'] === type);
  /** The node's agent, as far as the job store sees it: takes the node's jobs, and ends each as `handler` says. */
  const agent = async (n: string, handler: JobHandler): Promise<JobConsumer> => {
    const c = consumeJobs(
      { connection: agentRedis, prefix, log: createLogger('agent', 'silent') },
      { queue: nodeQueueName(n), lockDurationMs: 30_000, keepFinished: { age: 3600 } },
      handler,
    );
    consumers.push(c);
    await c.ready();
    return c;
  };

  beforeEach(async () => {
    api = await startFakeKubeApi();
    // Every write of the receiver is checked against the chart's own CRD, as the API server would.
    api.validate(COLLECTION, crdValidator(find(rendered('node-healthcheck'), 'CustomResourceDefinition', 'volumemedicremediations.volume-medic.io')));
    prefix = uniquePrefix('nhc');
    redis = new Redis(redisUrl());
    agentRedis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    stored = testJobs(redis, prefix);
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver') });
    api.put(node('worker-1', 'False', BOOT));
  });
  afterEach(async () => {
    for (const c of consumers.splice(0)) await c.close();
    for (const w of running.splice(0)) await w.close();
    await stored.close();
    await dispatcher.close();
    allRequests.push(...api.requests);
    await api.close();
    await dropPrefix(prefix);
    redis.disconnect();
    agentRedis.disconnect();
  });

  it("makes one residual-multipath-cleanup job for the object's node, keyed by its uid, and says so in its status", async () => {
    await start();
    const cr = api.put(remediation('worker-1'));
    const found = await until('one job', async () => ((await jobs('worker-1')).length === 1 ? jobs('worker-1') : undefined));
    const key = remediationJobKey(cr['metadata'].uid);
    expect(found[0]!.id).toBe(key);
    expect(found[0]!.data).toMatchObject({ runbook: 'residual-multipath-cleanup', target: { node: 'worker-1' }, bootId: BOOT });
    expect(found[0]!.data.evidence[0]).toMatchObject({
      source: 'node-healthcheck',
      summary: `VolumeMedicRemediation ${NS}/worker-1 of NodeHealthCheck nhc-worker asks for node worker-1's storage cleanup`,
    });
    await until('status Queued', () => statusOf('worker-1')?.['phase'] === 'Queued');
    expect(statusOf('worker-1')).toMatchObject({ jobId: key, queue: nodeQueueName('worker-1') });
    expect(condition('worker-1', 'Processing')).toMatchObject({ status: 'True', reason: 'JobQueued' });
    expect(condition('worker-1', 'Succeeded')).toMatchObject({ status: 'Unknown', reason: 'InProgress' });
  });

  it('makes one job per object however often it is seen: its updates, a relist, a second receiver', async () => {
    await start();
    const cr = api.put(remediation('worker-1'));
    await until('status Queued', () => statusOf('worker-1')?.['phase'] === 'Queued');
    // NHC's own update of the object, and a second receiver replica that lists it afresh.
    api.put({
      ...api.get(API_VERSION, KIND, 'worker-1', NS)!,
      metadata: { ...api.get(API_VERSION, KIND, 'worker-1', NS)!['metadata'], labels: { touched: 'yes' } },
    });
    await start();
    api.dropWatches();
    await new Promise((r) => setTimeout(r, 300));
    const all = await jobs('worker-1');
    expect(all.map((j) => j.id)).toEqual([remediationJobKey(cr['metadata'].uid)]);
  });

  it('updates the status when the job ends: Succeeded True when it cleaned, False with the reason when it found nothing or failed', async () => {
    api.put(node('worker-2', 'Unknown', BOOT));
    api.put(node('worker-3', 'Unknown', BOOT));
    await start();
    for (const n of ['worker-1', 'worker-2', 'worker-3']) api.put(remediation(n));
    for (const n of ['worker-1', 'worker-2', 'worker-3']) await until(`${n} Queued`, () => statusOf(n)?.['phase'] === 'Queued');
    await agent('worker-1', async () => result('succeeded', 'removed 2 residual maps'));
    await agent('worker-2', async () => result('nothing-to-do', 'no residual map'));
    // Failed for good (an attempt with retries left would be delayed: Parked, still Processing).
    await agent('worker-3', async () => {
      throw new PermanentError('multipath -f dm-3: map in use');
    });
    await until('worker-1 Succeeded', () => statusOf('worker-1')?.['phase'] === 'Succeeded');
    expect(condition('worker-1', 'Succeeded')).toMatchObject({ status: 'True', reason: 'RemediationSucceeded' });
    expect(condition('worker-1', 'Processing')).toMatchObject({ status: 'False' });
    await until('worker-2 Failed', () => statusOf('worker-2')?.['phase'] === 'Failed');
    expect(condition('worker-2', 'Succeeded')).toMatchObject({ status: 'False', reason: 'NothingToClean' });
    await until('worker-3 Failed', () => statusOf('worker-3')?.['phase'] === 'Failed');
    expect(condition('worker-3', 'Succeeded')).toMatchObject({ status: 'False', reason: 'JobFailed' });
    expect(condition('worker-3', 'Succeeded')!['message']).toContain('map in use');
  });

  it('withdraws the job of an object deleted before the job started; a started one runs to its end', async () => {
    api.put(node('worker-2', 'Unknown', BOOT));
    await start();
    api.put(remediation('worker-1'));
    api.put(remediation('worker-2'));
    await until('both Queued', () => statusOf('worker-1')?.['phase'] === 'Queued' && statusOf('worker-2')?.['phase'] === 'Queued');
    // worker-2's agent has taken its job (it holds the lock) and is still at it.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let taken = '';
    await agent('worker-2', async (job) => {
      taken = job.id;
      await held;
      return result('succeeded', 'removed 1 residual map');
    });
    await until('worker-2 job active', async () => taken !== '' && (await stored.state(nodeQueueName('worker-2'), taken)) === 'active');
    api.remove(API_VERSION, KIND, 'worker-1', NS);
    api.remove(API_VERSION, KIND, 'worker-2', NS);
    await until('worker-1 job withdrawn', async () => (await jobs('worker-1')).length === 0);
    await new Promise((r) => setTimeout(r, 200));
    expect(await stored.state(nodeQueueName('worker-2'), taken)).toBe('active');
    release();
    await until('worker-2 job completed', async () => (await stored.state(nodeQueueName('worker-2'), taken)) === 'completed');
  });

  it('makes no job for a node the cluster does not have, and says why in the status', async () => {
    await start();
    api.put(remediation('worker-9'));
    await until('status Skipped', () => statusOf('worker-9')?.['phase'] === 'Skipped');
    expect(condition('worker-9', 'Succeeded')).toMatchObject({ status: 'False', reason: 'NodeNotFound', message: 'the cluster has no Node worker-9' });
    expect(condition('worker-9', 'Processing')).toMatchObject({ status: 'False', reason: 'NodeNotFound' });
    expect(statusOf('worker-9')!['jobId']).toBeUndefined();
    expect(await jobs('worker-9')).toEqual([]);
  });

  it('withdraws a job not yet started when NodeHealthCheck times out (its nhc-timed-out annotation)', async () => {
    await start();
    api.put(remediation('worker-1'));
    await until('status Queued', () => statusOf('worker-1')?.['phase'] === 'Queued');
    const cr = api.get(API_VERSION, KIND, 'worker-1', NS)!;
    api.put({
      ...cr,
      metadata: { ...cr['metadata'], annotations: { ...cr['metadata'].annotations, 'remediation.medik8s.io/nhc-timed-out': '2026-12-07T13:40:00Z' } },
    });
    await until('status TimedOutByNHC', () => condition('worker-1', 'Succeeded')?.['reason'] === 'TimedOutByNHC');
    expect(statusOf('worker-1')).toMatchObject({ phase: 'Failed', jobId: expect.stringMatching(/^nhc_/) });
    expect(await jobs('worker-1')).toEqual([]);
  });

  it('made only API requests that src/adapters/kube/rbac.ts allows the receiver, status writes through the subresource', () => {
    const calls = allRequests.map(apiCallOf).filter((c) => c !== undefined);
    expect(calls.filter((c) => !allows('receiver', c.call, c.namespace)).map((c) => c.call)).toEqual([]);
    // The reconcile's start-up run lists Nodes and pods besides (kube-watches.ts).
    expect([...new Set(calls.map((c) => c.call))].filter((c) => c.includes('volume-medic.io') || c.startsWith('/nodes get')).sort()).toEqual([
      '/nodes get',
      'volume-medic.io/volumemedicremediations list',
      'volume-medic.io/volumemedicremediations watch',
      'volume-medic.io/volumemedicremediations/status patch',
    ]);
  });
});
