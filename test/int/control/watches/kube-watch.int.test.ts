import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../../../src/core/catalogue/idempotency-keys.ts';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import { startKubeWatches, type KubeWatches, type KubeWatchesOptions } from '../../../../src/control/watches/kube-watches.ts';
import { realSleep, type Sleep } from '../../../../src/adapters/kube/supervised-informer.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { startReceiver } from '../../../../src/control/receiver.ts';
import { startFakeKubeApi, type FakeKubeApi, type RecordedRequest } from '../../../testkit/fake-kube-api.ts';
import { apiCallOf, coreEvent, node, podWithVolume, uncoveredByRbac } from '../../../support/kube-objects.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import { testConfig } from '../../../support/config.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';
import { TaintSightings } from '../../../../src/adapters/controls/taint-sightings.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';

// The real @kubernetes/client-node against the fake list/watch API server, the real ingest path
// and a real Redis: what the watch sees becomes exactly the jobs a webhook would make.

const BOOT = 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26';
const NODES = '/api/v1/nodes';
const allRequests: RecordedRequest[] = [];

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Kubernetes watches against a list/watch API server', () => {
  let api: FakeKubeApi;
  let redis: Redis;
  let dispatcher: Dispatcher;
  let prefix: string;
  let watches: KubeWatches | undefined;
  let stored: TestJobs;
  /** Every delay the adapter asked for, in order. */
  let delays: number[];
  const sleep: Sleep = (ms, signal) => {
    delays.push(ms);
    return realSleep(Math.min(ms, 50), signal);
  };

  const start = async (o: Partial<KubeWatchesOptions> = {}): Promise<KubeWatches> => {
    watches = await startKubeWatches({
      kubeConfig: api.kubeConfig(),
      // Triage asks the same fake API server: a Pod Event becomes a job only for a volume the
      // pod really uses there.
      ingest: { lookups: new KubeLookups(kubeClients(api.kubeConfig())), dispatcher },
      sleep,
      backoff: { initialMs: 100, maxMs: 400 },
      reconcileIntervalMs: 0,
      ...o,
    });
    await until('watches listed and connected', () => watches!.state().ready);
    return watches;
  };
  const jobs = async (queueName: string) => stored.list(queueName, ['waiting', 'delayed', 'active', 'completed', 'failed']);
  /** Lists made by the Node informer (the reconcile lists nodes too). */
  const nodeInformerLists = () => watches!.state().watches.find((w) => w.name === 'nodes')!.lists;

  beforeEach(async () => {
    delays = [];
    api = await startFakeKubeApi();
    prefix = uniquePrefix('kwatch');
    redis = new Redis(redisUrl());
    stored = testJobs(redis, prefix);
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver') });
  });
  afterEach(async () => {
    await watches?.close();
    watches = undefined;
    allRequests.push(...api.requests);
    await stored.close();
    await dispatcher.close();
    await api.close();
    await dropPrefix(prefix);
    redis.disconnect();
  });

  it('turns a node going NotReady -> Ready into exactly one job keyed by node and boot id', async () => {
    api.put(node('worker-1', 'True', BOOT));
    await start();
    api.put(node('worker-1', 'Unknown', BOOT));
    api.put(node('worker-1', 'Unknown', BOOT)); // heartbeat-style updates while down
    api.put(node('worker-1', 'True', BOOT));
    const found = await until('one job', async () =>
      (await jobs(nodeQueueName('worker-1'))).length === 1 ? await jobs(nodeQueueName('worker-1')) : undefined,
    );
    expect(found[0]!.id).toBe(idempotencyKey('residual', ['worker-1', 'boot', 'worker-1', BOOT]));
    expect(found[0]!.data).toMatchObject({ runbook: 'residual-multipath-cleanup', target: { node: 'worker-1' }, bootId: BOOT });
    expect(found[0]!.data.evidence[0]).toMatchObject({ source: 'k8s-watch', summary: 'Node worker-1 Ready Unknown -> True (watch)' });
    // A later Ready update (a heartbeat) is no new transition.
    api.put(node('worker-1', 'True', BOOT));
    await new Promise((r) => setTimeout(r, 200));
    expect(await jobs(nodeQueueName('worker-1'))).toHaveLength(1);
  });

  it('keeps the kubelet Rebooted event sent by webhook and the same recovery seen by the watch as one job', async () => {
    const receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix }));
    try {
      api.put(node('worker-2', 'True', 'old-boot-0001'));
      await start();
      api.put(node('worker-2', 'Unknown', 'old-boot-0001'));
      const rebooted = coreEvent({
        name: 'worker-2.182c9f3e4b1a7d20',
        uid: '1b7d3c52-6a0e-4f61-9a8e-2c4d5e6f7a80',
        reason: 'Rebooted',
        message: `Node worker-2 has been rebooted, boot id: ${BOOT}`,
        involved: { kind: 'Node', name: 'worker-2' },
        host: 'worker-2',
      });
      const r = await post(`${receiver.url}/v1/events`, rebooted);
      expect(r.status).toBe(202);
      expect(r.json.accepted[0].deduplicated).toBe(false);
      api.put(node('worker-2', 'True', BOOT));
      // The kubelet's NodeReady event, seen by the Event watch: it takes the node's boot identity too.
      api.put(
        coreEvent({
          name: 'worker-2.182c9f3e5c0d1e22',
          reason: 'NodeReady',
          type: 'Normal',
          message: 'Node worker-2 status is now: NodeReady',
          involved: { kind: 'Node', name: 'worker-2' },
          host: 'worker-2',
        }),
      );
      await until('the watch signal stored', async () => api.requestsTo('GET', NODES, true).length > 0 && (await jobs(nodeQueueName('worker-2'))).length > 0);
      await new Promise((res) => setTimeout(res, 300));
      const found = await jobs(nodeQueueName('worker-2'));
      expect(found).toHaveLength(1);
      expect(found[0]!.id).toBe(r.json.accepted[0].key);
    } finally {
      await receiver.close();
    }
  });

  it('folds KubeNodeNotReady, KubeNodeUnreachable, the NodeReady event and the watch of one power loss into one job, and makes a second for the next power loss', async () => {
    const lookups = new KubeLookups(kubeClients(api.kubeConfig()));
    const receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['int-token-0123456789abcdef'] }), { lookups });
    const alert = (alertname: string, fingerprint: string, startsAt: string) => {
      const a = nodeNotReadyAlert('worker-7', 'resolved', fingerprint);
      return alertmanagerBody([{ ...a, labels: { ...a.labels, alertname }, startsAt }]);
    };
    const postAlert = async (body: unknown) => {
      const r = await post(`${receiver.url}/v1/alertmanager`, body, 'int-token-0123456789abcdef');
      expect(r.status).toBe(202);
      return r.json.accepted[0].key as string;
    };
    const nodeReadyEvent = (name: string) =>
      coreEvent({
        name,
        reason: 'NodeReady',
        type: 'Normal',
        message: 'Node worker-7 status is now: NodeReady',
        involved: { kind: 'Node', name: 'worker-7' },
        host: 'worker-7',
      });
    const stored = async () => (await jobs(nodeQueueName('worker-7'))).map((j) => j.id).sort();
    try {
      api.put(node('worker-7', 'True', 'boot-a'));
      await start();
      // Power loss: Unknown while down, then kubelet's first status after boot (new boot id, not
      // Ready yet), then Ready.
      api.put(node('worker-7', 'Unknown', 'boot-a'));
      api.put(node('worker-7', 'False', 'boot-b'));
      api.put(node('worker-7', 'True', 'boot-b'));
      // The two alerts resolve (different fingerprints, startsAt 30 s apart), the Unreachable one first.
      const k1 = await postAlert(alert('KubeNodeUnreachable', 'fpunreach7', '2026-12-01T03:13:14.512Z'));
      api.put(nodeReadyEvent('worker-7.182c9f3e5c0d1e01'));
      const k2 = await postAlert(alert('KubeNodeNotReady', 'fpnotready7', '2026-12-01T03:12:44.512Z'));
      expect(k2).toBe(k1);
      await until(
        'the watch and the NodeReady event triaged',
        async () => (await stored()).length > 0 && api.requestsTo('GET', '/api/v1/events', true).length > 0,
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(await stored()).toEqual([k1]);
      expect(k1).toBe(idempotencyKey('residual', ['worker-7', 'boot', 'worker-7', 'boot-b']));

      // A second power loss hours later: a new boot, so a new job for each of its signals.
      api.put(node('worker-7', 'Unknown', 'boot-b'));
      api.put(node('worker-7', 'True', 'boot-c'));
      api.put(nodeReadyEvent('worker-7.182c9f3e5c0d1e02'));
      await until('the second outage stored', async () => (await stored()).length === 2);
      const k3 = await postAlert(alert('KubeNodeNotReady', 'fpnotready7', '2026-12-01T09:40:02.118Z'));
      const k4 = await postAlert(alert('KubeNodeUnreachable', 'fpunreach7', '2026-12-01T09:40:32.118Z'));
      expect(k4).toBe(k3);
      expect(k3).not.toBe(k1);
      await new Promise((r) => setTimeout(r, 300));
      expect(await stored()).toEqual([k1, k3].sort());
    } finally {
      await receiver.close();
    }
  });

  it('reconnects a cleanly ended watch from its resourceVersion without relisting and sees the transition', async () => {
    api.put(node('worker-3', 'True', BOOT));
    await start({ eventReasons: [] });
    api.put(node('worker-3', 'False', BOOT));
    await new Promise((r) => setTimeout(r, 100));
    const rv = String(api.resourceVersion);
    expect(api.dropWatches()).toBe(1);
    await until('a new watch', () => api.openWatches('api/v1/nodes') === 1);
    const rewatch = api.requestsTo('GET', NODES, true).at(-1)!;
    expect(rewatch.query).toMatchObject({ watch: 'true', resourceVersion: rv, allowWatchBookmarks: 'true' });
    api.put(node('worker-3', 'True', BOOT));
    await until('one job', async () => (await jobs(nodeQueueName('worker-3'))).length === 1);
    expect(nodeInformerLists()).toBe(1);
  });

  it('restarts a watch whose connection was reset (the client gives up on it) and resumes where it was', async () => {
    api.put(node('worker-4', 'True', BOOT));
    await start({ eventReasons: [] });
    api.put(node('worker-4', 'Unknown', BOOT));
    await new Promise((r) => setTimeout(r, 100));
    api.dropWatches({ abrupt: true });
    await until('restarted and watching', () => watches!.state().watches[0]!.restarts === 1 && watches!.state().ready);
    api.put(node('worker-4', 'True', BOOT));
    await until('one job', async () => (await jobs(nodeQueueName('worker-4'))).length === 1);
    expect(watches!.state().watches[0]).toMatchObject({ name: 'nodes', status: 'watching', restarts: 1, lists: 1 });
  });

  for (const expireAs of ['event', 'http'] as const) {
    it(`relists after 410 Gone (${expireAs === 'event' ? 'ERROR line in the stream' : 'HTTP 410'}) and still sees the Ready transition it missed`, async () => {
      api.expireAs = expireAs;
      api.put(node('worker-5', 'True', BOOT));
      await start({ eventReasons: [] });
      api.put(node('worker-5', 'False', BOOT));
      await new Promise((r) => setTimeout(r, 100));
      // Disconnected while the node comes back and the server compacts its history.
      api.dropWatches({ hold: true });
      api.put(node('worker-5', 'True', BOOT));
      api.compact();
      api.releaseWatches();
      await until('one job', async () => (await jobs(nodeQueueName('worker-5'))).length === 1);
      expect(nodeInformerLists()).toBe(2);
      expect(watches!.state().watches[0]).toMatchObject({ lists: 2, restarts: 0 });
    });
  }

  it('restarts a watch the API server keeps failing with capped exponential backoff, and reports it meanwhile', async () => {
    api.put(node('worker-6', 'True', BOOT));
    await start({ eventReasons: [] });
    api.failNext(/^GET \/api\/v1\/nodes\?.*watch=true/, 500, 4);
    api.dropWatches();
    await until('restarting', () => watches!.state().watches[0]!.status === 'restarting');
    expect(watches!.state().ready).toBe(false);
    expect(watches!.state().watches[0]!.lastError).toMatch(/Internal Server Error|500/);
    await until('watching again', () => watches!.state().ready);
    expect(watches!.state().watches[0]!.restarts).toBe(4);
    expect(delays.filter((d) => d >= 100)).toEqual([100, 200, 400, 400]);
    api.put(node('worker-6', 'Unknown', BOOT));
    api.put(node('worker-6', 'True', BOOT));
    await until('one job', async () => (await jobs(nodeQueueName('worker-6'))).length === 1);
  });

  it('survives an API server that is down at start and catches up once it answers', async () => {
    // Three failures: the informer's first list, the start-up reconcile's list, the first retry.
    api.failNext(/^GET \/api\/v1\/nodes/, 503, 3);
    api.put(node('worker-7', 'False', BOOT));
    watches = await startKubeWatches({
      kubeConfig: api.kubeConfig(),
      ingest: { lookups: new InMemoryLookups(), dispatcher },
      sleep,
      backoff: { initialMs: 100, maxMs: 400 },
      reconcileIntervalMs: 0,
      eventReasons: [],
    });
    await until('watching', () => watches!.state().ready);
    expect(watches.state().watches[0]!.restarts).toBe(2);
    expect(watches.state().reconcile.lastError).toMatch(/503/);
    api.put(node('worker-7', 'True', BOOT));
    await until('one job', async () => (await jobs(nodeQueueName('worker-7'))).length === 1);
  });

  it('turns a watched FailedMount "rbd image is still being used" Event into the rbd job', async () => {
    await start({ nodes: false });
    for (const o of podWithVolume({
      namespace: 'shop',
      pod: 'web-0',
      node: 'worker-1',
      claim: 'data-web-0',
      pv: 'pvc-1',
      rbd: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e' },
    }))
      api.put(o);
    api.put(
      coreEvent({
        name: 'web-0.17f0a1b2c3d4e5f6',
        namespace: 'shop',
        reason: 'FailedMount',
        host: 'worker-1',
        involved: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
        message:
          'MountVolume.MountDevice failed for volume "pvc-1" : rpc error: code = Internal desc = rbd image replicapool/csi-vol-0b3f5f8e is still being used',
      }),
    );
    // Not ours: a reason that is not watched at all, and our own Events.
    api.put(
      coreEvent({
        name: 'web-0.x1',
        namespace: 'shop',
        reason: 'BackOff',
        message: 'Back-off restarting failed container',
        involved: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
      }),
    );
    const found = await until('the rbd job', async () => {
      const j = await jobs(CLUSTER_QUEUE);
      return j.length > 0 ? j : undefined;
    });
    expect(found).toHaveLength(1);
    expect(found[0]!.data).toMatchObject({
      runbook: 'rbd-stale-mapping',
      target: { pool: 'replicapool', image: 'csi-vol-0b3f5f8e', node: 'worker-1' },
    });
    expect(
      api
        .requestsTo('GET', '/api/v1/events', true)
        .map((r) => r.query['fieldSelector'])
        .sort(),
    ).toEqual(['reason=Failed', 'reason=FailedAttachVolume', 'reason=FailedMapVolume', 'reason=FailedMount', 'reason=NodeReady', 'reason=Rebooted']);
  });

  it('reconciles, with no watch running, a node that recovered while volume-medic was down and a pod stuck on a missing local disk', async () => {
    const now = Date.now();
    api.put(node('worker-8', 'True', BOOT, { readySince: new Date(now - 120_000), created: new Date(now - 10 * 86_400_000) }));
    api.put(node('worker-new', 'True', 'new-boot', { readySince: new Date(now - 60_000), created: new Date(now - 120_000) }));
    api.put(node('worker-old', 'True', 'old-boot', { readySince: new Date(now - 5 * 86_400_000) }));
    for (const o of podWithVolume({
      namespace: 'kafka',
      pod: 'kafka-0',
      node: 'worker-8',
      claim: 'data-kafka-0',
      pv: 'local-pv-3f8a1c2e',
      local: { path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
    }))
      api.put(o);
    api.put(
      coreEvent({
        name: 'kafka-0.1820aa',
        namespace: 'kafka',
        reason: 'FailedMapVolume',
        host: 'worker-8',
        involved: { kind: 'Pod', name: 'kafka-0', namespace: 'kafka' },
        message: 'MapVolume.EvalHostSymlinks failed for volume "local-pv-3f8a1c2e" : lstat /dev/disk/by-id/wwn-0x5000c500a1b2c3d4: no such file or directory',
      }),
    );
    watches = await startKubeWatches({
      kubeConfig: api.kubeConfig(),
      ingest: { lookups: new KubeLookups(kubeClients(api.kubeConfig())), dispatcher },
      sleep,
      reconcileIntervalMs: 0,
      nodes: false,
      eventReasons: [],
    });
    await until('a reconcile run', () => watches!.state().reconcile.runs === 1);
    expect(watches.state().reconcile.lastError).toBeUndefined();
    expect(watches.state().reconcile).toMatchObject({ lastResult: { nodes: 1, pods: 1, signals: 2 } });
    expect((await jobs(nodeQueueName('worker-8'))).map((j) => j.data.runbook).sort()).toEqual(['local-pv-placeholder', 'residual-multipath-cleanup']);
    expect(await jobs(nodeQueueName('worker-new'))).toHaveLength(0);
    expect(await jobs(nodeQueueName('worker-old'))).toHaveLength(0);
    // Running again folds into the same jobs.
    await watches.reconcileNow();
    expect(await jobs(nodeQueueName('worker-8'))).toHaveLength(2);
  });

  it("records an out-of-service taint's first sight with the boot of that moment, makes the release job once the node is Ready on a new boot, and drops the record with the taint", async () => {
    const ring = keyringFor('receiver', readKeys(TEST_KEYS_DIR));
    const sightings = new TaintSightings(redis, prefix, { sealer: testSealer('receiver'), ring, allowUnsigned: false });
    const oos = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: '2026-12-07T08:00:00Z' };
    const down = node('worker-9', 'Unknown', 'boot-before');
    api.put({ ...down, spec: { taints: [oos] } });
    await start({ taintSightings: sightings, ingest: { lookups: new InMemoryLookups(), dispatcher } });
    const first = await until('the first sight', () => sightings.get('worker-9'));
    expect(first).toMatchObject({ bootIdAtFirstSight: 'boot-before', timeAdded: '2026-12-07T08:00:00.000Z', readyAtFirstSight: 'Unknown' });
    expect(await jobs(CLUSTER_QUEUE)).toEqual([]);

    api.put({ ...node('worker-9', 'True', 'boot-after'), spec: { taints: [oos] } });
    const [job] = await until('the release job', async () => {
      const j = (await jobs(CLUSTER_QUEUE)).filter((x) => x.name === 'out-of-service-taint-release');
      return j.length > 0 && j;
    });
    expect(job?.data).toMatchObject({ target: { node: 'worker-9' }, taint: { bootIdAtFirstSight: 'boot-before', firstSeenAt: first.firstSeenAt } });

    api.put({ ...node('worker-9', 'True', 'boot-after'), spec: { taints: [] } });
    await until('the record dropped', async () => (await sightings.get('worker-9')) === undefined);
  });

  // Last on purpose: a file's tests run in order, so this sees every request made above.
  it('made only API requests that src/adapters/kube/rbac.ts allows the receiver', () => {
    expect(allRequests.length).toBeGreaterThan(50);
    expect(uncoveredByRbac(allRequests, 'receiver')).toEqual([]);
    // And the other way: every watch/reconcile call listed for the receiver was made (a listed
    // call the code no longer makes would keep a grant nobody uses). The review objects are the
    // operator-auth code's, tested there; the Lease is the fleet-metrics election's
    // (fleet-metrics-lease.int.test.ts); the console's list of a job's Events is made and checked
    // in console.int.test.ts; the VolumeMedicRemediation watch's in node-healthcheck.int.test.ts.
    // in console.int.test.ts; the VolumeRemediation records' in test/int/control/records/.
    const made = new Set(allRequests.map((r) => apiCallOf(r)?.call));
    const listed = DIRECT_CALLS.receiver
      .map((d) => d.call)
      .filter((c) => !/review|^coordination\.k8s\.io\/leases |^volume-medic\.io\//.test(c) && c !== 'events.k8s.io/events list');
    expect(listed.filter((c) => !made.has(c))).toEqual([]);
  });
});
