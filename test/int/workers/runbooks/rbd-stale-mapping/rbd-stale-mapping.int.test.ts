import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Verification } from '../../../../../workers/engine/runbook.ts';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RbdStaleMappingJob, RbdUnmapJob } from '../../../../../src/core/catalogue/jobs.ts';
import { RemediationJob } from '../../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../../src/core/catalogue/queues.ts';
import type { Mode, RunbookResult } from '../../../../../src/core/catalogue/result.ts';
import { readFileSync } from 'node:fs';
import { CLUSTER_QUEUE } from '../../../../../src/core/catalogue/queues.ts';
import { Dispatcher } from '../../../../../src/adapters/jobstore/dispatcher.ts';
import { startReceiver } from '../../../../../src/control/receiver.ts';
import { createRunbookWorker } from '../../../../../workers/engine/runbook-worker.ts';
import { AgentStore } from '../../../../../src/adapters/jobstore/agent-store.ts';
import { testConfig } from '../../../../support/config.ts';
import { post } from '../../../../testkit/payloads.ts';
import { producerConnection } from '../../../../../src/adapters/redis/redis.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import { createRealHost } from '../../../../../workers/host/real-host.ts';
import { createRbdStaleMapping } from '../../../../../workers/runbooks/rbd-stale-mapping/handler.ts';
import { InMemoryRbdLookups } from '../../../../../workers/runbooks/rbd-stale-mapping/rbd-lookups.ts';
import type { FencingMode } from '../../../../../workers/runbooks/rbd-stale-mapping/policy.ts';
import type { NodeJobSink } from '../../../../../workers/runbooks/rbd-stale-mapping/node-job-sink.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { cephUnavailable, startCeph, type TestCeph } from '../../../../support/ceph.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../../support/redis.ts';
import { testSealer } from '../../../../support/trust.ts';

// The cluster half against a REAL one-node Ceph (test/support/ceph.ts): a separate `rbd watch`
// process holds a watch on the image; the runbook finds it through `rbd info` -> `rados
// listwatchers` (+ `rbd status`), maps 127.0.0.1 to a node through in-memory lookups, and then
// either fences it (node gone, fencing on: the watcher must really disappear) or hands the node
// half to that node's queue in a real Redis.

const skip = cephUnavailable();
if (skip) console.warn(`\n*** SKIPPING the Ceph integration tests: ${skip} ***\n`);

const POOL = 'kube';
const IMAGE = 'csi-vol-0001';
const job: RbdStaleMappingJob = {
  version: 1,
  runbook: 'rbd-stale-mapping',
  key: 'rbd_kube_csi-vol-0001_0123456789ab',
  target: { pool: POOL, image: IMAGE, pod: { namespace: 'shop', name: 'db-7f9c-new' }, node: 'worker-1' },
  evidence: [{ source: 'k8s-event', summary: 'FailedMount: rbd image kube/csi-vol-0001 is still being used', raw: {} }],
};

/** `null`: no node has the watcher's address (127.0.0.1); `False`: NotReady for 10 min, past the grace. */
function lookups(watcherNodeReady: 'True' | 'False' | null): InMemoryRbdLookups {
  const l = new InMemoryRbdLookups().addNode({
    name: 'worker-1',
    addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    ready: 'True',
    labels: {},
  });
  if (watcherNodeReady) {
    // The watch comes from this machine: the "stale" node is the one with InternalIP 127.0.0.1.
    l.addNode({
      name: 'worker-2',
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: 'worker-2' },
      ],
      ready: watcherNodeReady,
      readySince: new Date(Date.now() - 600_000).toISOString(),
      labels: {},
    });
  }
  return l
    .addPersistentVolume({
      name: 'pvc-0001',
      volumeMode: 'Filesystem',
      rbd: { pool: POOL, image: IMAGE },
      claim: { namespace: 'shop', name: 'db-data' },
      accessModes: ['ReadWriteOnce'],
    })
    .addClaim({ namespace: 'shop', name: 'db-data', volumeName: 'pvc-0001', accessModes: ['ReadWriteOnce'], phase: 'Bound' })
    .addPod({
      namespace: 'shop',
      name: 'db-7f9c-new',
      node: 'worker-1',
      phase: 'Pending',
      claims: ['db-data'],
      waiting: [],
      controller: { kind: 'ReplicaSet', name: 'db-7f9c' },
    })
    .addReplicaSet({ namespace: 'shop', name: 'db-7f9c' }, 'db')
    .addDeployment({ namespace: 'shop', name: 'db', strategy: 'RollingUpdate', maxSurge: 1, claims: ['db-data'] }) as InMemoryRbdLookups;
}

const ctx = (mode: Mode): RunbookContext => ({
  jobId: job.key,
  attempt: 1,
  mode,
  ranOn: 'cluster-worker',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

describe.skipIf(skip !== undefined)('rbd-stale-mapping against a real Ceph', () => {
  let ceph: TestCeph;
  let stateDir: string;
  const watches: Array<{ stop(): Promise<void> }> = [];

  beforeAll(async () => {
    const started = Date.now();
    ceph = await startCeph();
    await ceph.cli('ceph', ['osd', 'pool', 'create', POOL, '8']);
    await ceph.cli('ceph', ['osd', 'pool', 'application', 'enable', POOL, 'rbd']);
    await ceph.cli('rbd', ['create', `${POOL}/${IMAGE}`, '--size', '16', '--image-feature', 'layering']);
    stateDir = await mkdtemp(join(tmpdir(), 'vm-rbd-state-'));
    console.info(`one-node Ceph ready in ${Date.now() - started} ms`);
  }, 120_000);

  afterEach(async () => {
    await Promise.all(watches.splice(0).map((w) => w.stop()));
  });

  afterAll(async () => {
    await ceph?.stop();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  }, 30_000);

  const watchers = (): Promise<string[]> => ceph.watchers(POOL, IMAGE);

  async function holdWatch(): Promise<string> {
    const before = new Set(await watchers());
    watches.push(await ceph.watch(POOL, IMAGE));
    const added = (await watchers()).filter((w) => !before.has(w));
    expect(added).toHaveLength(1);
    return added[0]!;
  }

  const handler = (ready: 'True' | 'False' | null, fencing: FencingMode, sink: NodeJobSink, handoffVerifyMs = 20_000, fenceCidrs: string[] = []) =>
    createRbdStaleMapping({
      host: createRealHost(),
      ceph: { conf: ceph.conf },
      lookups: lookups(ready),
      nodeJobs: sink,
      stateDir,
      policy: { fencing, blocklistExpirySeconds: 600, handoffVerifyMs, fenceCidrs },
    });
  const noSink: NodeJobSink = {
    enqueue: async () => {
      throw new Error('must not enqueue');
    },
  };

  it('fences the watcher of a gone node: the client is blocklisted and its watch disappears', async () => {
    const address = await holdWatch();
    const started = Date.now();
    const result: RunbookResult = await handler('False', 'on', noSink)(job, ctx('enforce'));
    const tookMs = Date.now() - started;

    expect(result.outcome).toBe('succeeded');
    expect(result.steps.map((s) => [s.id, s.status])).toEqual([[`blocklist-add:${address}`, 'done']]);
    expect(result.steps[0]!.evidence!.map((e) => [e.claim, e.status])).toEqual([
      [expect.stringMatching(new RegExp(`^${address} \\(client\\.[0-9]+\\) still watches ${POOL}/${IMAGE}$`)), 'holds'],
      ['127.0.0.1 is an address of node worker-2, and of no other node', 'holds'],
      ['node worker-2 has not been Ready for 300 s', 'holds'],
      ['no pod on node worker-2 that uses PVC shop/db-data may still run', 'holds'],
      [`${address} is not blocklisted yet`, 'holds'],
    ]);
    expect(result.summary).toContain(`undo: \`ceph osd blocklist rm ${address}\``);
    expect(result.summary).toContain('Prevention: Deployment shop/db');
    expect(await watchers()).not.toContain(address);
    const listed = (await ceph.cli('ceph', ['osd', 'blocklist', 'ls'])).stdout;
    expect(listed).toContain(address);
    // The whole trail shows which Ceph commands ran, never the config path.
    const argvs = result.commands.map((c) => c.argv.join(' '));
    expect(argvs).toContain(`ceph osd blocklist add ${address} 600`);
    expect(argvs.some((a) => a.startsWith('rados -p kube listwatchers rbd_header.'))).toBe(true);
    expect(JSON.stringify(result)).not.toContain(ceph.conf);
    console.info(`fence run took ${tookMs} ms`);
    await ceph.cli('ceph', ['osd', 'blocklist', 'rm', address]);
  });

  it('never fences a real watcher whose address no node has: refused, naming the address and the image, and it keeps watching', async () => {
    const address = await holdWatch();
    const err = await handler(null, 'on', noSink)(job, ctx('enforce')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    const reasons = (err as RefusedError).reasons.join(' ');
    expect(reasons).toContain(`watcher ${address} of ${POOL}/${IMAGE} is at 127.0.0.1, an address no node lists`);
    const result = (err as { result?: RunbookResult }).result!;
    expect(result.commands.some((c) => c.argv.includes('blocklist') && c.argv.includes('add'))).toBe(false);
    expect(await watchers()).toContain(address);
    expect((await ceph.cli('ceph', ['osd', 'blocklist', 'ls'])).stdout).not.toContain(address);
  });

  it('fences a real watcher whose address no node has when it lies in a listed network, with evidence naming it', async () => {
    const address = await holdWatch();
    const result = await handler(null, 'on', noSink, 20_000, ['127.0.0.0/8'])(job, ctx('enforce'));
    expect(result.outcome).toBe('succeeded');
    expect(result.steps[0]!.evidence).toContainEqual(
      expect.objectContaining({
        claim: '127.0.0.1 is in 127.0.0.0/8, a network the operator allows fencing in, and no node lists it',
        status: 'holds',
      }),
    );
    expect(await watchers()).not.toContain(address);
    await ceph.cli('ceph', ['osd', 'blocklist', 'rm', address]);
  });

  it("with the node Ready, hands the node half to that node's queue instead of fencing, and sees the watch leave", async () => {
    const address = await holdWatch();
    // The node half, here: the watching client lets go a moment after the hand-over, as the node
    // agent's `rbd unmap` does (test/lab/rbd-unmap.lab.test.ts does it with a real kernel client).
    const holder = watches.at(-1)!;
    const prefix = uniquePrefix('rbd');
    const redis = producerConnection(redisUrl());
    const dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('cluster-worker') });
    try {
      const sink: NodeJobSink = {
        async enqueue(j: RbdUnmapJob) {
          const [e] = await dispatcher.enqueue([j]);
          setTimeout(() => void holder.stop(), 1_500);
          return { queue: e!.queue, deduplicated: e!.deduplicated };
        },
      };
      const result = await handler('True', 'on', sink)(job, ctx('enforce'));
      expect(result.outcome).toBe('succeeded');
      expect((result.verification as Verification).checks.map((c) => c.what)).toContain(`${address} (node worker-2) no longer watches ${POOL}/${IMAGE}`);
      expect(result.commands.some((c) => c.argv.includes('blocklist') && c.argv.includes('add'))).toBe(false);

      const queued = await dispatcher.queue(nodeQueueName('worker-2')).getJobs(['waiting', 'prioritized', 'delayed']);
      expect(queued).toHaveLength(1);
      const node = RemediationJob.parse(queued[0]!.data);
      expect(node).toMatchObject({
        runbook: 'rbd-unmap',
        target: { node: 'worker-2', pool: POOL, image: IMAGE, watcher: address },
        claim: { namespace: 'shop', name: 'db-data' },
        parent: job.key,
      });
      expect(queued[0]!.id).toBe(node.key);
      expect(await watchers()).not.toContain(address);
    } finally {
      await dispatcher.close();
      redis.disconnect();
      await dropPrefix(prefix);
    }
  });

  it("end to end: a FailedMount event becomes the cluster job, which becomes a node job on the watcher node's queue", async () => {
    // The captured ceph-csi event names k8s-dev/csi-vol-dea80a4e-...; this Ceph gets that image.
    const event = JSON.parse(readFileSync(new URL('../../../../fixtures/events/rbd-still-used-ceph-csi.exporter.json', import.meta.url), 'utf8')) as unknown;
    const pool = 'k8s-dev';
    const image = 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825';
    await ceph.cli('ceph', ['osd', 'pool', 'create', pool, '8']);
    await ceph.cli('ceph', ['osd', 'pool', 'application', 'enable', pool, 'rbd']);
    await ceph.cli('rbd', ['create', `${pool}/${image}`, '--size', '16', '--image-feature', 'layering']);
    watches.push(await ceph.watch(pool, image));

    const TOKEN = 'integration-test-token-0123456789';
    const prefix = uniquePrefix('rbde2e');
    const redis = producerConnection(redisUrl());
    const dispatcher = new Dispatcher(redis, { prefix, timeoutMs: 5_000, sealer: testSealer('cluster-worker') });
    const k8s = new InMemoryRbdLookups()
      .addNode({ name: 'k8s-dev-worker0', addresses: [{ type: 'InternalIP', address: '10.0.0.10' }], ready: 'True', labels: {} })
      .addNode({ name: 'k8s-dev-worker1', addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], ready: 'True', labels: {} })
      .addPersistentVolume({
        name: 'pvc-7e9588ad-19d1-4099-bd49-30fd2b9f0d42',
        volumeMode: 'Filesystem',
        rbd: { pool, image },
        claim: { namespace: 'monitoring', name: 'grafana' },
        accessModes: ['ReadWriteOnce'],
      })
      .addClaim({
        namespace: 'monitoring',
        name: 'grafana',
        volumeName: 'pvc-7e9588ad-19d1-4099-bd49-30fd2b9f0d42',
        accessModes: ['ReadWriteOnce'],
      })
      .addPod({
        namespace: 'monitoring',
        name: 'kube-prometheus-grafana-74bfb88f64-tctbf',
        node: 'k8s-dev-worker0',
        phase: 'Pending',
        claims: ['grafana'],
        waiting: [],
        controller: { kind: 'ReplicaSet', name: 'kube-prometheus-grafana-74bfb88f64' },
      })
      .addReplicaSet({ namespace: 'monitoring', name: 'kube-prometheus-grafana-74bfb88f64' }, 'kube-prometheus-grafana')
      .addDeployment({
        namespace: 'monitoring',
        name: 'kube-prometheus-grafana',
        strategy: 'RollingUpdate',
        claims: ['grafana'],
      }) as InMemoryRbdLookups;
    // The receiver sees the same cluster: it takes the Event only because the pod uses that image.
    const receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: [TOKEN] }), { lookups: k8s });
    const worker = createRunbookWorker({
      queue: CLUSTER_QUEUE,
      store: new AgentStore({ redis: redisUrl(), process: 'cluster-worker', prefix, log: pino({ level: 'silent' }) }),
      ranOn: 'cluster-worker',
      registry: {
        'rbd-stale-mapping': createRbdStaleMapping({
          host: createRealHost(),
          ceph: { conf: ceph.conf },
          lookups: k8s,
          nodeJobs: {
            enqueue: async (j) => {
              const [e] = await dispatcher.enqueue([j]);
              return { queue: e!.queue, deduplicated: e!.deduplicated };
            },
          },
          stateDir,
          policy: { fencing: 'on' },
        }),
      },
      modeOf: () => 'enforce',
      accepts: () => undefined,
      lockDurationMs: 30_000,
      log: pino({ level: 'silent' }),
    });
    try {
      const r = await post(`${receiver.url}/v1/events`, event, TOKEN);
      expect(r.status).toBe(202);
      expect(r.json.accepted[0]).toMatchObject({ runbook: 'rbd-stale-mapping', queue: CLUSTER_QUEUE });
      const clusterKey = r.json.accepted[0].key as string;

      const nodeQueue = dispatcher.queue(nodeQueueName('k8s-dev-worker1'));
      const deadline = Date.now() + 30_000;
      let queued = await nodeQueue.getJobs(['waiting']);
      while (queued.length === 0 && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 200));
        queued = await nodeQueue.getJobs(['waiting']);
      }
      expect(queued).toHaveLength(1);
      expect(RemediationJob.parse(queued[0]!.data)).toMatchObject({
        runbook: 'rbd-unmap',
        parent: clusterKey,
        target: { node: 'k8s-dev-worker1', pool, image },
      });
      // The cluster job waits for the watch to leave; the node half (no kernel RBD here) is the
      // watching client letting go.
      await watches.at(-1)!.stop();

      const cluster = await dispatcher.queue(CLUSTER_QUEUE).getJob(clusterKey);
      const deadline2 = Date.now() + 10_000;
      while (!(await cluster?.isCompleted()) && Date.now() < deadline2) await new Promise((res) => setTimeout(res, 100));
      const done = await dispatcher.queue(CLUSTER_QUEUE).getJob(clusterKey);
      expect((done!.returnvalue as RunbookResult).outcome).toBe('succeeded');
      expect((done!.returnvalue as RunbookResult).summary).toContain(
        'Prevention: Deployment monitoring/kube-prometheus-grafana uses the ReadWriteOnce PVC monitoring/grafana with strategy RollingUpdate and maxSurge 25% (default)',
      );
      // The requesting pod's own node was never a candidate.
      expect(await dispatcher.queue(nodeQueueName('k8s-dev-worker0')).count()).toBe(0);
    } finally {
      await worker.close();
      await receiver.close();
      await dispatcher.close();
      redis.disconnect();
      await dropPrefix(prefix);
    }
  });

  it('with the node Ready but the watch never leaving, fails its verification after the hand-over window (and is retried)', async () => {
    const address = await holdWatch();
    const sink: NodeJobSink = { enqueue: async (j) => ({ queue: nodeQueueName(j.target.node), deduplicated: false }) };
    const err = await handler('True', 'on', sink, 2_000)(job, ctx('enforce')).catch((e: unknown) => e);
    // The message says how long it really waited: the 2 s window, or longer when the last
    // `rados listwatchers` of the window was slow (a loaded machine: 3 s, twice in a row here).
    const message = (err as Error).message;
    expect(message).toContain(`${address} (node worker-2) still watches ${POOL}/${IMAGE} after `);
    expect(Number(/ still watches \S+ after (\d+) s/.exec(message)?.[1])).toBeGreaterThanOrEqual(2);
    expect((err as { result?: RunbookResult }).result?.outcome).toBe('failed');
    expect(await watchers()).toContain(address);
  });

  it('under the approval policy plans the fence as a high-risk step (the engine holds it for approval); dry-run only says what it would do', async () => {
    const address = await holdWatch();
    const gated = await handler('False', 'approval', noSink)(job, ctx('dry-run'));
    expect(gated.plan).toMatchObject({ kind: 'steps', steps: [{ kind: 'blocklist-add', address, risk: 'high' }] });

    const planned = await handler('False', 'on', noSink)(job, ctx('dry-run'));
    expect(planned.outcome).toBe('planned');
    expect(planned.steps.map((s) => s.status)).toEqual(['would-run']);
    expect(await watchers()).toContain(address);
  });
});

if (skip) {
  describe('rbd-stale-mapping against a real Ceph', () => {
    it.skip(`skipped: ${skip}`, () => {});
  });
}
