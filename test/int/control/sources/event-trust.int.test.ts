import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLUSTER_QUEUE, nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { ingest, type IngestResult } from '../../../../src/control/ingest/ingest.ts';
import { KubeLookups } from '../../../../src/adapters/kube/api/kube-lookups.ts';
import { kubeClients } from '../../../../src/adapters/kube/kube-config.ts';
import { createKubeMetrics, type KubeMetrics } from '../../../../src/adapters/kube/kube-metrics.ts';
import { startKubeWatches, type KubeWatches } from '../../../../src/control/watches/kube-watches.ts';
import type { SignalSink } from '../../../../src/control/watches/signal-sink.ts';
import { realSleep } from '../../../../src/adapters/kube/supervised-informer.ts';
import { Dispatcher } from '../../../../src/adapters/jobstore/dispatcher.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { fixture, fixtureLookups } from '../../../support/fixtures.ts';
import { coreEvent, node, podWithVolume } from '../../../support/kube-objects.ts';
import { getJson, post } from '../../../testkit/payloads.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs } from '../../../testkit/jobs.ts';
import { testSealer } from '../../../support/trust.ts';

// Issue 20, "Event trust", against a real Redis: an Event from a tenant namespace about a pod
// that does not use the volume, from a wrong reporter, or about the wrong kind of object makes no
// job, whether it is posted to the webhook or seen by the watch (the real client against the
// wire-protocol fake API server, with triage asking that same API server). Each file also makes
// one real job from the genuine twin, so "no job" is not just "nothing works".

const TOKEN = 'event-trust-test-token-0123456789';
const GRAFANA_IMAGE = { pool: 'k8s-dev', image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825' };

async function jobsIn(redis: Redis, prefix: string, queue: string) {
  const jobs = testJobs(redis, prefix);
  try {
    return await jobs.list(queue, ['waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized']);
  } finally {
    await jobs.close();
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Event trust: POST /v1/events and /v1/npd', () => {
  const prefix = uniquePrefix('evtrust');
  let receiver: Receiver;
  let redis: Redis;
  const allJobs = async () => (await redis.keys(`${prefix}:vm-*:*`)).filter((k) => !/:(meta|events|id|stalled-check|wait|marker|prioritized|pc)$/.test(k));

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    // The cluster triage sees: the captured events' pods with their PVCs and PVs (grafana uses
    // the ceph-csi image), and a tenant pod with a volume of its own.
    const lookups = fixtureLookups()
      .addPod({ namespace: 'tenant-a', name: 'web-0', node: 'k8s-dev-worker0', phase: 'Pending', claims: ['scratch'], waiting: [] })
      .addClaim({ namespace: 'tenant-a', name: 'scratch', volumeName: 'pvc-tenant-scratch', accessModes: ['ReadWriteOnce'] })
      .addPersistentVolume({
        name: 'pvc-tenant-scratch',
        volumeMode: 'Filesystem',
        claim: { namespace: 'tenant-a', name: 'scratch' },
        rbd: { pool: 'k8s-dev', image: 'csi-vol-tenant' },
      });
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN] }), { lookups });
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it.each([
    [
      'a kubelet-looking FailedMount from a tenant namespace about a pod that does not use the image',
      'forged-rbd-still-used-tenant.exporter',
      'pod-volume-unconfirmed',
      /pod tenant-a\/web-0 uses no PV backed by rbd image k8s-dev\/csi-vol-dea80a4e/,
    ],
    [
      'a FailedMount about the real pod from a reporter that is not kubelet',
      'forged-rbd-still-used-wrong-reporter.exporter',
      'event-reporter-not-trusted',
      /reported by "csi-rbdplugin"/,
    ],
    [
      'a LocalDiskLost "present" about a ConfigMap in a tenant namespace',
      'forged-local-disk-restored-configmap.exporter',
      'event-wrong-object-kind',
      /kind "ConfigMap"/,
    ],
  ])('makes no job of %s, and says why', async (_name, name, reason, detail) => {
    const r = await post(`${receiver.url}/v1/events`, fixture('events', name), TOKEN);
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([]);
    expect(r.json.ignored).toEqual([expect.objectContaining({ reason, detail: expect.stringMatching(detail), source: 'k8s-event' })]);
  });

  it('makes no job of a LocalDiskLost about a Node written in a tenant namespace, nor of the ConfigMap one, through /v1/npd', async () => {
    const r = await post(
      `${receiver.url}/v1/npd`,
      [fixture('npd', 'forged-local-disk-restored-node-tenant.event'), fixture('events', 'forged-local-disk-restored-configmap.exporter')],
      TOKEN,
    );
    expect(r.status).toBe(202);
    expect(r.json.accepted).toEqual([]);
    expect(r.json.ignored.map((i: { reason: string; index: number }) => [i.reason, i.index])).toEqual([
      ['event-namespace-not-trusted', 0],
      ['event-wrong-object-kind', 1],
    ]);
  });

  it('has stored no job for any of them, and counts them by reason in the metrics', async () => {
    expect(await allJobs()).toEqual([]);
    const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
    for (const reason of ['pod-volume-unconfirmed', 'event-reporter-not-trusted', 'event-wrong-object-kind']) {
      expect(metrics).toMatch(new RegExp(`volume_medic_signals_ignored_total\\{source="k8s-event",reason="${reason}"\\} [1-9]`));
    }
    expect(metrics).toMatch(/volume_medic_signals_ignored_total\{source="npd",reason="event-namespace-not-trusted"\} 1/);
  });

  it('still makes the jobs of the genuine twins: kubelet about the pod that uses the image, NPD about its node', async () => {
    const rbd = await post(`${receiver.url}/v1/events`, fixture('events', 'rbd-still-used-ceph-csi.exporter'), TOKEN);
    expect(rbd.json).toMatchObject({
      accepted: [expect.objectContaining({ runbook: 'rbd-stale-mapping', queue: CLUSTER_QUEUE })],
      ignored: [],
    });
    const lost = await post(`${receiver.url}/v1/npd`, fixture('npd', 'local-disk-lost.event'), TOKEN);
    expect(lost.json).toMatchObject({
      accepted: [expect.objectContaining({ runbook: 'local-pv-placeholder', node: 'worker-2' })],
      ignored: [],
    });
    expect((await jobsIn(redis, prefix, CLUSTER_QUEUE)).map((j) => j.data.target)).toEqual([expect.objectContaining(GRAFANA_IMAGE)]);
  });
});

describe('Event trust without cluster access (no KUBE_WATCH)', () => {
  const prefix = uniquePrefix('evtrust-nokube');
  let receiver: Receiver;
  let redis: Redis;

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    // Job reads are an operator's (OPERATOR_AUTH=insecure here: operator identity is not this file's subject).
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN], kubeWatch: false, operatorAuth: 'insecure' }));
  });
  afterAll(async () => {
    await receiver?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  it("makes no job of a genuine kubelet Pod Event it cannot confirm (unknown means refuse), and still of a Node's", async () => {
    const rbd = await post(`${receiver.url}/v1/events`, fixture('events', 'rbd-still-used-ceph-csi.exporter'), TOKEN);
    expect(rbd.json.accepted).toEqual([]);
    expect(rbd.json.ignored).toEqual([
      expect.objectContaining({
        reason: 'pod-volume-unconfirmed',
        detail: expect.stringContaining('without cluster access (KUBE_WATCH) nothing confirms it'),
      }),
    ]);
    const local = await post(`${receiver.url}/v1/events`, fixture('events', 'local-pv-map-lstat-missing.exporter'), TOKEN);
    expect(local.json.ignored.map((i: { reason: string }) => i.reason)).toEqual(['pod-volume-unconfirmed']);
    expect(await jobsIn(redis, prefix, CLUSTER_QUEUE)).toEqual([]);
    expect(await jobsIn(redis, prefix, nodeQueueName('worker-2'))).toEqual([]);
    const rebooted = await post(`${receiver.url}/v1/events`, fixture('events', 'node-rebooted.exporter'), TOKEN);
    expect(rebooted.json.accepted).toEqual([expect.objectContaining({ runbook: 'residual-multipath-cleanup', node: 'worker-1' })]);
    expect(await getJson(`${receiver.url}/v1/jobs?node=worker-1`)).toMatchObject({ jobs: [expect.objectContaining({ node: 'worker-1' })] });
  });
});

describe('Event trust: the Kubernetes watch', () => {
  let api: FakeKubeApi;
  let redis: Redis;
  let dispatcher: Dispatcher;
  let prefix: string;
  let watches: KubeWatches | undefined;
  let metrics: KubeMetrics;
  /** What the real ingest path (triage + Redis) made of each signal the watches handed over. */
  let results: Array<{ origin: string } & IngestResult>;

  beforeEach(async () => {
    api = await startFakeKubeApi();
    prefix = uniquePrefix('evtrust-watch');
    redis = new Redis(redisUrl());
    dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('receiver') });
    metrics = createKubeMetrics(new Registry());
    results = [];
  });
  afterEach(async () => {
    await watches?.close();
    watches = undefined;
    await dispatcher.close();
    await api.close();
    await dropPrefix(prefix);
    redis.disconnect();
  });

  const observed = async (watch: string, outcome: string): Promise<number> =>
    (await metrics.observed.get()).values.find((v) => v.labels['watch'] === watch && v.labels['outcome'] === outcome)?.value ?? 0;

  it('makes no job of a tenant-namespace, wrong-reporter or wrong-kind Event, and the job of the genuine one', async () => {
    const STILL_USED = (image: string) =>
      `MountVolume.MountDevice failed for volume "pvc-1" : rpc error: code = Internal desc = rbd image replicapool/${image} is still being used`;
    // Ready for days: the reconcile sees no recovery of its own.
    api.put(node('worker-1', 'True', 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26', { readySince: new Date(Date.now() - 5 * 86_400_000) }));
    for (const o of podWithVolume({
      namespace: 'shop',
      pod: 'web-0',
      node: 'worker-1',
      claim: 'data-web-0',
      pv: 'pvc-shop',
      rbd: { pool: 'replicapool', image: 'csi-vol-shop' },
    }))
      api.put(o);
    for (const o of podWithVolume({
      namespace: 'tenant-a',
      pod: 'probe-0',
      node: 'worker-1',
      claim: 'scratch',
      pv: 'pvc-tenant',
      rbd: { pool: 'replicapool', image: 'csi-vol-tenant' },
    }))
      api.put(o);
    // A tenant names the shop's image in an Event about its own pod, claiming to be kubelet.
    api.put(
      coreEvent({
        name: 'probe-0.a1',
        namespace: 'tenant-a',
        reason: 'FailedMount',
        host: 'worker-1',
        involved: { kind: 'Pod', name: 'probe-0', namespace: 'tenant-a' },
        message: STILL_USED('csi-vol-shop'),
      }),
    );
    // The right pod and namespace, but not kubelet's word.
    api.put(
      coreEvent({
        name: 'web-0.a2',
        namespace: 'shop',
        reason: 'FailedMount',
        host: 'worker-1',
        component: 'shop-operator',
        involved: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
        message: STILL_USED('csi-vol-shop'),
      }),
    );
    // A node "back" told by a ConfigMap named like the node, and by a Node Event in a tenant namespace.
    api.put(
      coreEvent({
        name: 'worker-1.a3',
        namespace: 'tenant-a',
        reason: 'Rebooted',
        involved: { kind: 'ConfigMap', name: 'worker-1', namespace: 'tenant-a' },
        message: 'Node worker-1 has been rebooted, boot id: 00000000-0000-4000-8000-000000000001',
      }),
    );
    api.put(
      coreEvent({
        name: 'worker-1.a4',
        namespace: 'tenant-a',
        reason: 'Rebooted',
        involved: { kind: 'Node', name: 'worker-1', namespace: 'tenant-a' },
        message: 'Node worker-1 has been rebooted, boot id: 00000000-0000-4000-8000-000000000002',
      }),
    );

    const lookups = new KubeLookups(kubeClients(api.kubeConfig()));
    const sink: SignalSink = {
      async submit(signals, origin) {
        results.push({ origin, ...(await ingest([...signals], [], { lookups, dispatcher })) });
      },
    };
    watches = await startKubeWatches({
      kubeConfig: api.kubeConfig(),
      ingest: { lookups, dispatcher },
      sink,
      metrics,
      nodes: false,
      reconcileIntervalMs: 3_600_000,
      sleep: (ms, signal) => realSleep(Math.min(ms, 50), signal),
      backoff: { initialMs: 100, maxMs: 400 },
    });
    await until('the watches listed', () => watches!.state().ready);
    await until('both Rebooted Events ignored', async () => (await observed('events-Rebooted', 'ignored')) === 2);
    await until('the reporter-less FailedMount ignored', async () => (await observed('events-FailedMount', 'ignored')) === 1);
    await until("the tenant pod's FailedMount triaged", () => results.some((r) => r.ignored.some((i) => i.reason === 'pod-volume-unconfirmed')));
    expect(await jobsIn(redis, prefix, CLUSTER_QUEUE)).toEqual([]);
    expect(await jobsIn(redis, prefix, nodeQueueName('worker-1'))).toEqual([]);
    expect(results.flatMap((r) => r.ignored)).toContainEqual(
      expect.objectContaining({
        reason: 'pod-volume-unconfirmed',
        detail: expect.stringContaining('pod tenant-a/probe-0 uses no PV backed by rbd image replicapool/csi-vol-shop'),
      }),
    );

    // kubelet's own Event about the shop's pod: the one job.
    api.put(
      coreEvent({
        name: 'web-0.a5',
        namespace: 'shop',
        reason: 'FailedMount',
        host: 'worker-1',
        involved: { kind: 'Pod', name: 'web-0', namespace: 'shop' },
        message: STILL_USED('csi-vol-shop'),
      }),
    );
    const jobs = await until('the genuine job', async () => {
      const j = await jobsIn(redis, prefix, CLUSTER_QUEUE);
      return j.length > 0 ? j : undefined;
    });
    expect(jobs.map((j) => j.data.target)).toEqual([
      { pool: 'replicapool', image: 'csi-vol-shop', pod: { namespace: 'shop', name: 'web-0' }, node: 'worker-1' },
    ]);
    expect(await jobsIn(redis, prefix, nodeQueueName('worker-1'))).toEqual([]);
  });
});
