import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import type { EventsApi } from '../../../../src/adapters/kube/api/apis.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { JOB_EVENT_REASONS, type JobEventInput, JobEventRecorder, jobEventName } from '../../../../src/adapters/kube/job-events.ts';
import { claimOfJob } from '../../../../src/adapters/kube/job-claims.ts';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { validateAll } from '../../../testkit/k8s-schema.ts';
import { apiCallOf, podWithVolume, uncoveredByRbac } from '../../../support/kube-objects.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import type { KObject } from '../../../../scripts/deploy/chart.ts';

// Job results written as events.k8s.io/v1 Events through the real client, received by the fake
// API server exactly as a real one would receive them: it refuses what kube-apiserver's Event
// validation refuses (a repeat may change only `series`), and every Event it stored is checked
// against the Kubernetes models (kubernetes-models' schema and client-node's fields).

const EVENTS = '/apis/events.k8s.io/v1/namespaces';
const T0 = new Date('2026-12-01T03:41:14.512Z');

// The receiver and cluster worker write through @kubernetes/client-node, the node agent through
// its small REST client: both must produce the same requests.
const CLIENTS: Array<[string, (api: FakeKubeApi) => EventsApi]> = [
  ['@kubernetes/client-node', (api) => kubeClients(api.kubeConfig()).events],
  ['src/adapters/kube/rest (node agent)', (api) => restApis(new KubeRest({ server: api.url, token: () => 'fake-token' })).events],
];

describe.each(CLIENTS)('Kubernetes Events for jobs, through %s', (_name, client) => {
  let api: FakeKubeApi;
  let clock: Date;
  const recorder = () => new JobEventRecorder({ events: client(api), instance: 'volume-medic-receiver-7c9d', now: () => clock });

  beforeEach(async () => {
    api = await startFakeKubeApi();
    clock = T0;
  });
  const made = new Set<string | undefined>();
  afterEach(async () => {
    expect(await validateAll(api.list('events.k8s.io/v1', 'Event') as KObject[])).toEqual([]);
    // Any subject: the cluster worker's Events (on a Pod) may be in any namespace.
    expect(uncoveredByRbac(api.requests, 'cluster-worker')).toEqual([]);
    for (const r of api.requests) if (apiCallOf(r)?.call.startsWith('events.k8s.io/')) made.add(apiCallOf(r)?.call);
    await api.close();
  });
  // The other way: the recorder uses every Event verb the workers' roles grant (create, the read
  // after a conflict, the series patch), so none of them is a grant nobody uses. (Their other
  // direct calls, the write port's, are checked the same way in test/int/workers/kube-writes/.)
  afterAll(() => {
    for (const c of ['cluster-worker', 'node-agent'] as const) {
      const events = new Set(DIRECT_CALLS[c].map((d) => d.call).filter((call) => call.startsWith('events.k8s.io/')));
      expect([...made].sort(), c).toEqual([...events].sort());
    }
  });

  it('posts an Event for a job on its Node with the right regarding object, controller and job id', async () => {
    const r = await recorder().recordJobEvent({
      jobId: 'residual_worker-1_boot_worker-1_d87bdb0a_0f1e2d3c4b5a',
      runbook: 'residual-multipath-cleanup',
      outcome: 'refused',
      mode: 'dry-run',
      regarding: { kind: 'Node', name: 'worker-1', uid: '5a0e6f0e-2f6b-4c2c-9f43-0d6c1f1e2a11' },
      message: 'map dm-3 still has a live path (sdc active ready running); not touched',
    });
    expect(r).toMatchObject({ namespace: 'default', result: 'created', count: 1 });
    const posts = api.requestsTo('POST', `${EVENTS}/default/events`);
    expect(posts).toHaveLength(1);
    expect(posts[0]!.body).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: r.name, namespace: 'default' },
      regarding: { apiVersion: 'v1', kind: 'Node', name: 'worker-1', uid: '5a0e6f0e-2f6b-4c2c-9f43-0d6c1f1e2a11' },
      reportingController: 'volume-medic',
      reportingInstance: 'volume-medic-receiver-7c9d',
      reason: 'RemediationRefused',
      type: 'Warning',
      action: 'residual-multipath-cleanup',
      eventTime: '2026-12-01T03:41:14.512000Z',
    });
    expect((posts[0]!.body as { note: string }).note).toContain(
      '(job residual_worker-1_boot_worker-1_d87bdb0a_0f1e2d3c4b5a, residual-multipath-cleanup, dry-run)',
    );
    expect((posts[0]!.body as { regarding: { namespace?: string } }).regarding.namespace).toBeUndefined();
  });

  it("puts a Pod Event in the pod's namespace", async () => {
    const r = await recorder().recordJobEvent({
      jobId: 'rbd_replicapool_csi-vol-0b3f5f8e_1a2b3c4d5e6f',
      runbook: 'rbd-stale-mapping',
      outcome: 'started',
      regarding: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
      message: 'looking for the stale watcher of replicapool/csi-vol-0b3f5f8e',
    });
    expect(r).toMatchObject({ namespace: 'shop', result: 'created' });
    expect(api.get('events.k8s.io/v1', 'Event', r.name, 'shop')).toMatchObject({
      regarding: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
      reason: 'RemediationStarted',
      type: 'Normal',
    });
  });

  it('aggregates repeats of the same result into one Event with a growing series, also across a restart', async () => {
    const input = {
      jobId: 'lpv_local-pv-3f8a1c2e_9a8b7c6d5e4f',
      runbook: 'local-pv-placeholder',
      outcome: 'failed' as const,
      regarding: { kind: 'PersistentVolume' as const, name: 'local-pv-3f8a1c2e' },
      message: 'losetup failed: no free loop device above loop101',
    };
    const rec = recorder();
    await rec.recordJobEvent(input);
    clock = new Date(T0.getTime() + 60_000);
    const second = await rec.recordJobEvent(input);
    expect(second).toMatchObject({ result: 'updated', count: 2 });
    const patch = api.requestsTo('PATCH', `${EVENTS}/default/events/${second.name}`)[0]!;
    expect(patch.contentType).toBe('application/json-patch+json');
    // A new process (restart, another replica) continues the same series.
    clock = new Date(T0.getTime() + 120_000);
    const third = await recorder().recordJobEvent(input);
    expect(third).toMatchObject({ result: 'updated', count: 3 });
    const events = api.list('events.k8s.io/v1', 'Event');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      metadata: { name: jobEventName(input) },
      series: { count: 3, lastObservedTime: '2026-12-01T03:43:14.512000Z' },
    });
    // A different outcome of the same job is its own Event.
    await rec.recordJobEvent({ ...input, outcome: 'succeeded', message: 'placeholder attached as /dev/loop101' });
    expect(api.list('events.k8s.io/v1', 'Event')).toHaveLength(2);
  });

  it('starts a new Event when the aggregated one has expired, and reports (not throws) an API failure', async () => {
    const input = {
      jobId: 'j1',
      runbook: 'residual-multipath-cleanup',
      outcome: 'succeeded' as const,
      regarding: { kind: 'Node' as const, name: 'worker-2' },
      message: 'removed dm-4 and its 4 paths',
    };
    const rec = recorder();
    const first = await rec.recordJobEvent(input);
    api.remove('events.k8s.io/v1', 'Event', first.name, 'default');
    expect(await rec.recordJobEvent(input)).toMatchObject({ result: 'created', count: 1 });
    api.failNext(/^PATCH /, 500);
    const failed = await rec.recordJobEvent(input);
    expect(failed.result).toBe('failed');
    expect(failed.error).toBeTruthy();
  });

  it('six repeats of one incident (attempts that start and are refused again) make two Event objects, each counting them; the note stays the first', async () => {
    const rec = recorder();
    const base = { jobId: 'residual_worker-3_boot_1', runbook: 'residual-multipath-cleanup', regarding: { kind: 'Node' as const, name: 'worker-3' } };
    for (let i = 0; i < 6; i++) {
      clock = new Date(T0.getTime() + i * 30_000);
      await rec.recordJobEvent({ ...base, outcome: 'started', message: 'started on worker-3' });
      await rec.recordJobEvent({ ...base, outcome: 'refused', message: `map dm-3 still has a live path (look ${i + 1})` });
    }
    const events = api.list('events.k8s.io/v1', 'Event');
    expect(events).toHaveLength(2);
    expect(events.map((e) => [e['reason'], e['series']?.count]).sort()).toEqual([
      ['RemediationRefused', 6],
      ['RemediationStarted', 6],
    ]);
    expect(events.find((e) => e['reason'] === 'RemediationRefused')?.['note']).toContain('(look 1)');
    // Every repeat reached the API server as a series patch it accepted (no 422).
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(10);
  });

  it('the waits and the plan are Events too: awaiting approval (Warning), parked, planned; one per variant of a wait', async () => {
    const rec = recorder();
    const base = { jobId: 'oos_worker-4_1', runbook: 'out-of-service-taint-release', regarding: { kind: 'Node' as const, name: 'worker-4' } };
    const outcomes: Array<Pick<JobEventInput, 'outcome' | 'message' | 'variant'>> = [
      { outcome: 'awaiting-approval', message: 'waiting for approval of remove-taint: volume-medic approve oos_worker-4_1', variant: 'request-1' },
      { outcome: 'parked', message: 'parked (paused): paused by alice', variant: 'paused' },
      { outcome: 'parked', message: 'parked (breaker): the cluster breaker is open', variant: 'breaker' },
      { outcome: 'parked', message: 'parked (paused): paused by alice', variant: 'paused' },
      { outcome: 'planned', message: 'dry-run: enforce would take 1 step(s): remove-taint' },
    ];
    for (const o of outcomes) await rec.recordJobEvent({ ...base, ...o });
    const events = api.list('events.k8s.io/v1', 'Event');
    expect(events.map((e) => `${e['type']} ${e['reason']} ${e['series']?.count ?? 1}`).sort()).toEqual([
      'Normal RemediationParked 1',
      'Normal RemediationParked 2',
      'Normal RemediationPlanned 1',
      'Warning RemediationAwaitingApproval 1',
    ]);
    // Reasons are CamelCase and say what volume-medic did.
    for (const { reason } of Object.values(JOB_EVENT_REASONS)) expect(reason).toMatch(/^[A-Z][A-Za-z]+$/);
  });

  it("puts a Local PV's and an RBD image's Events on their claim too, in the claim's namespace; looked up once per job", async () => {
    for (const o of [
      ...podWithVolume({
        namespace: 'shop',
        pod: 'db-0',
        node: 'worker-1',
        claim: 'data-db-0',
        pv: 'local-pv-3f8a1c2e',
        local: { path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
      }),
      ...podWithVolume({
        namespace: 'blog',
        pod: 'web-0',
        node: 'worker-2',
        claim: 'data-web-0',
        pv: 'pvc-9a1b',
        rbd: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e' },
      }),
    ])
      api.put(o);
    const claimOf = claimOfJob(new KubeLookups(kubeClients(api.kubeConfig())));
    const rec = new JobEventRecorder({ events: client(api), instance: 'worker-1', now: () => clock, claimOf });
    const lpv = {
      runbook: 'local-pv-placeholder',
      key: 'lpv_1',
      target: { node: 'worker-1', pv: 'local-pv-3f8a1c2e', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
    } as unknown as RemediationJob;
    await rec.recordJobEvent(
      {
        jobId: 'lpv_1',
        runbook: 'local-pv-placeholder',
        outcome: 'started',
        regarding: { kind: 'PersistentVolume', name: 'local-pv-3f8a1c2e' },
        message: 'started',
      },
      lpv,
    );
    await rec.recordJobEvent(
      {
        jobId: 'lpv_1',
        runbook: 'local-pv-placeholder',
        outcome: 'succeeded',
        regarding: { kind: 'PersistentVolume', name: 'local-pv-3f8a1c2e' },
        message: 'attached',
      },
      lpv,
    );
    const rbd = {
      runbook: 'rbd-stale-mapping',
      key: 'rbd_1',
      target: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e', pod: { namespace: 'blog', name: 'web-0' } },
    } as unknown as RemediationJob;
    await rec.recordJobEvent(
      {
        jobId: 'rbd_1',
        runbook: 'rbd-stale-mapping',
        outcome: 'refused',
        regarding: { kind: 'Pod', namespace: 'blog', name: 'web-0' },
        message: 'watcher on a Ready node',
      },
      rbd,
    );
    const on = (kind: string) =>
      api
        .list('events.k8s.io/v1', 'Event')
        .filter((e) => e['regarding'].kind === kind)
        .map((e) => `${e['metadata'].namespace} ${e['regarding'].namespace ?? '-'}/${e['regarding'].name} ${e['reason']}`)
        .sort();
    expect(on('PersistentVolumeClaim')).toEqual([
      'blog blog/data-web-0 RemediationRefused',
      'shop shop/data-db-0 RemediationStarted',
      'shop shop/data-db-0 RemediationSucceeded',
    ]);
    expect(on('PersistentVolume')).toEqual(['default -/local-pv-3f8a1c2e RemediationStarted', 'default -/local-pv-3f8a1c2e RemediationSucceeded']);
    expect(on('Pod')).toEqual(['blog blog/web-0 RemediationRefused']);
    expect(api.requests.filter((r) => r.method === 'GET' && r.path.includes('/persistentvolumes/local-pv-3f8a1c2e'))).toHaveLength(1);
  });
});
