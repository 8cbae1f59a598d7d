import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import type { EventsApi } from '../../../../src/adapters/kube/api/apis.ts';
import { restApis } from '../../../../src/adapters/kube/rest/apis.ts';
import { KubeRest } from '../../../../src/adapters/kube/rest/transport.ts';
import { JobEventRecorder, jobEventName } from '../../../../src/adapters/kube/job-events.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { apiCallOf, uncoveredByRbac } from '../../../support/kube-objects.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';

// Job results written as events.k8s.io/v1 Events through the real client, received by the fake
// API server exactly as a real one would receive them.

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
    // Any subject: the cluster worker's Events (on a Pod) may be in any namespace.
    expect(uncoveredByRbac(api.requests, 'cluster-worker')).toEqual([]);
    for (const r of api.requests) made.add(apiCallOf(r)?.call);
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
});
