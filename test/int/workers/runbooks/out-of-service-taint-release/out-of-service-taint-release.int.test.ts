import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeRest } from '../../../../../src/adapters/kube/rest/transport.ts';
import type { OutOfServiceTaintReleaseJob } from '../../../../../src/core/catalogue/jobs.ts';
import { RefusedError } from '../../../../../src/core/errors.ts';
import type { RunbookContext } from '../../../../../workers/engine/registry.ts';
import { RunbookFailedError } from '../../../../../workers/engine/runbook-failed-error.ts';
import { createRealHost } from '../../../../../workers/host/real-host.ts';
import { removeTaintPatch } from '../../../../../workers/runbooks/out-of-service-taint-release/execute-step.ts';
import type { CleanupJobFact } from '../../../../../workers/runbooks/out-of-service-taint-release/facts.ts';
import { createOutOfServiceTaintRelease } from '../../../../../workers/runbooks/out-of-service-taint-release/handler.ts';
import { type FakeKubeApi, type RecordedRequest, startFakeKubeApi } from '../../../../testkit/fake-kube-api.ts';
import { apiCallOf, uncoveredByRbac } from '../../../../support/kube-objects.ts';
import { DIRECT_CALLS } from '../../../../../src/adapters/kube/rbac.ts';
import { ApiKubeWrites } from '../../../../../src/adapters/kube/api-kube-writes.ts';
import { kubeClients } from '../../../../../src/adapters/kube/kube-config.ts';
import { FakeHost } from '../../../../testkit/fake-host.ts';
import type { Host } from '../../../../../workers/host/host.ts';
import type { BlocklistUndo } from '../../../../../workers/runbooks/rbd-stale-mapping/blocklist-undo.ts';
import { ourBlocklistOf } from '../../../../../workers/runbooks/out-of-service-taint-release/our-blocklist.ts';

// out-of-service-taint-release against the fake API server, with the real HTTP reads and a
// KubeWrites that PATCHes it: every refusal of docs/decisions/0008 §4.3 names its reason and the
// server records no PATCH; the positive path sends exactly the JSON patch of §4.4 (tests, then
// the remove of that index) and leaves every other taint as it was; a taint added between the
// re-check and the PATCH fails its `test` op and the job, run again, plans on the new list.

const NODE = 'worker-2';
const BOOT_OLD = '0f2a3c7e-0000-4000-8000-000000000001';
const BOOT_NEW = '0f2a3c7e-0000-4000-8000-000000000002';
const T0 = '2026-12-07T08:00:00Z';
const OOS = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: T0 };
const UNSCHEDULABLE = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: '2026-12-07T07:59:00Z' };
const DEDICATED = { key: 'example.com/dedicated', value: 'db', effect: 'NoSchedule' };

const job = (taint: Partial<OutOfServiceTaintReleaseJob['taint']> = {}): OutOfServiceTaintReleaseJob => ({
  version: 1,
  runbook: 'out-of-service-taint-release',
  key: 'oos_worker-2_0123456789ab',
  target: { node: NODE },
  taint: { timeAdded: T0, bootIdAtFirstSight: BOOT_OLD, firstSeenAt: '2026-12-07T08:00:05Z', ...taint },
  evidence: [{ source: 'k8s-watch', summary: `Node ${NODE} Ready while tainted out-of-service`, raw: {} }],
});

const ctx = (): RunbookContext => ({
  jobId: 'oos_worker-2_0123456789ab',
  attempt: 1,
  mode: 'enforce',
  ranOn: 'cluster-worker',
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
});

const ago = (s: number): string => new Date(Date.now() - s * 1000).toISOString();
const residualClean = (): CleanupJobFact => ({
  runbook: 'residual-multipath-cleanup',
  id: 'residual_worker-2_aaaaaaaaaaaa',
  state: 'completed',
  bootId: BOOT_NEW,
  finishedAt: ago(300),
  outcome: 'succeeded',
});

let api: FakeKubeApi;
let stateDir: string;

/** The Node as it came back: Ready 20 min, a new boot, tainted out of service between two other taints. */
function seedNode(o: { boot?: string; labels?: Record<string, string>; taints?: object[] } = {}): void {
  api.put({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE, ...o.labels } },
    spec: { taints: o.taints ?? [UNSCHEDULABLE, OOS, DEDICATED] },
    status: {
      nodeInfo: { bootID: o.boot ?? BOOT_NEW },
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: ago(20 * 60) }],
      addresses: [{ type: 'InternalIP', address: '10.0.0.2' }],
    },
  });
  api.put({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: NODE, namespace: 'kube-node-lease' }, spec: { renewTime: ago(5) } });
}

/** The cluster worker's real write port (client-node), as clusterKube builds it. */
function clusterWorkerWrites(): ApiKubeWrites {
  const clients = kubeClients(api.kubeConfig());
  return new ApiKubeWrites({ component: 'cluster-worker', core: clients.core, events: clients.events });
}

function handler(cleanup: CleanupJobFact[] = [residualClean()], ceph?: { host: Host; undo: BlocklistUndo }) {
  const rest = new KubeRest({ server: api.url, token: () => 'fake-token' });
  return createOutOfServiceTaintRelease({
    host: ceph?.host ?? createRealHost(),
    kube: clusterWorkerWrites(),
    get: (path, query) => rest.get(path, query),
    cleanupJobs: async () => cleanup,
    ourBlocklist: ceph ? ourBlocklistOf(ceph.undo, ceph.host, () => new Date()) : async () => [],
    readyGraceSeconds: 600,
    stateDir,
    fenceTimeoutMs: 0,
  });
}

const patches = () => api.requestsTo('PATCH', '/api/v1/nodes');
const writes = () => api.requests.filter((r) => r.method !== 'GET');

async function refusal(run: Promise<unknown>): Promise<string[]> {
  const err = await run.catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RefusedError);
  return [...(err as RefusedError).reasons];
}

beforeEach(async () => {
  api = await startFakeKubeApi();
  // No metal3 nor csi-addons here: their lists answer 404 (not installed).
  api.absentGroups.add('infrastructure.cluster.x-k8s.io');
  api.absentGroups.add('csiaddons.openshift.io');
  stateDir = await mkdtemp(join(tmpdir(), 'vm-oos-'));
});

/** Every read of every test, for the RBAC check at the end. */
const reads: RecordedRequest[] = [];

afterEach(async () => {
  reads.push(...api.requests.filter((r) => r.method === 'GET'));
  await api.close();
  await rm(stateDir, { recursive: true, force: true });
});

describe('out-of-service-taint-release refuses, and sends no PATCH', () => {
  it('refuses same-boot: the node runs the boot it ran when the taint was first seen, and no Rebooted Event since', async () => {
    seedNode({ boot: BOOT_OLD });
    const reasons = await refusal(handler([{ ...residualClean(), bootId: BOOT_OLD }])(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^same-boot: Node worker-2 still runs boot 0f2a3c7e-0000-4000-8000-000000000001/)]);
    expect(writes()).toEqual([]);
  });

  it('refuses volume-attachment-left and names the VolumeAttachment', async () => {
    seedNode();
    api.put({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'csi-4b1d' },
      spec: { attacher: 'rbd.csi.ceph.com', nodeName: NODE, source: { persistentVolumeName: 'pvc-1' } },
    });
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^volume-attachment-left: VolumeAttachment csi-4b1d still names node worker-2/)]);
    expect(writes()).toEqual([]);
  });

  it('refuses terminating-pod-left and names the pod', async () => {
    seedNode();
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db-0', namespace: 'shop', deletionTimestamp: ago(3600) },
      spec: { nodeName: NODE },
    });
    api.put({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', namespace: 'shop' }, spec: { nodeName: NODE } });
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^terminating-pod-left: pod shop\/db-0 bound to node worker-2 is Terminating/)]);
    expect(writes()).toEqual([]);
  });

  it('refuses another-remediator-owns-taint for a SelfNodeRemediation named after the node', async () => {
    seedNode();
    api.put({ apiVersion: 'self-node-remediation.medik8s.io/v1alpha1', kind: 'SelfNodeRemediation', metadata: { name: NODE, namespace: 'medik8s' } });
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^another-remediator-owns-taint: SelfNodeRemediation medik8s\/worker-2 names node worker-2/)]);
    expect(writes()).toEqual([]);
  });

  it('refuses another-remediator-owns-taint for a FenceAgentsRemediation that names the node in its annotation', async () => {
    seedNode();
    api.put({
      apiVersion: 'fence-agents-remediation.medik8s.io/v1alpha1',
      kind: 'FenceAgentsRemediation',
      metadata: { name: 'nhc-abc12', namespace: 'medik8s', annotations: { 'remediation.medik8s.io/node-name': NODE } },
    });
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^another-remediator-owns-taint: FenceAgentsRemediation medik8s\/nhc-abc12/)]);
    expect(writes()).toEqual([]);
  });

  it('refuses another-remediator-owns-taint when a remediator list is forbidden (403: cannot tell), not when its CRD is absent (404)', async () => {
    seedNode();
    api.absentGroups.add('fence-agents-remediation.medik8s.io');
    api.failNext(/selfnoderemediations/, 403, 10);
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([
      expect.stringMatching(/^another-remediator-owns-taint: cannot tell whether a remediator owns the taint: SelfNodeRemediation list: .*403/),
    ]);
    expect(writes()).toEqual([]);
  });

  it('refuses another-remediator-owns-taint for a node excluded from remediation', async () => {
    seedNode({ labels: { 'remediation.medik8s.io/exclude-from-remediation': 'true' } });
    const reasons = await refusal(handler()(job(), ctx()));
    expect(reasons).toEqual([
      expect.stringMatching(/^another-remediator-owns-taint: node worker-2 carries the label remediation.medik8s.io\/exclude-from-remediation=true/),
    ]);
    expect(writes()).toEqual([]);
  });

  it('refuses host-not-clean while the clean-up of this boot refused', async () => {
    seedNode();
    const refused = { ...residualClean(), state: 'failed', outcome: 'refused', summary: 'RefusedError: refused: map mpatha has a live path' };
    const reasons = await refusal(handler([refused])(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^host-not-clean: residual-multipath-cleanup residual_worker-2_aaaaaaaaaaaa failed/)]);
    expect(writes()).toEqual([]);
  });

  it('waits (fails to be retried, no refusal) while the clean-up of this boot is still running', async () => {
    seedNode();
    const { outcome: _unfinished, finishedAt: _notYet, ...running } = residualClean();
    const err = await handler([{ ...running, state: 'active' }])(job(), ctx()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as Error).message).toMatch(/waiting for the node half of boot .*residual-multipath-cleanup residual_worker-2_aaaaaaaaaaaa active/);
    expect(writes()).toEqual([]);
  });

  it('refuses host-not-clean when no clean-up of this boot is known (one of the old boot does not count)', async () => {
    seedNode();
    const reasons = await refusal(handler([{ ...residualClean(), bootId: BOOT_OLD }])(job(), ctx()));
    expect(reasons).toEqual([expect.stringMatching(/^host-not-clean: no residual-multipath-cleanup job of boot 0f2a3c7e-0000-4000-8000-000000000002/)]);
    expect(writes()).toEqual([]);
  });
});

describe('out-of-service-taint-release removes exactly the taint', () => {
  it('sends the JSON patch that tests resourceVersion and the taint at its index, removes that index, leaves the other taints, and posts its Event', async () => {
    seedNode();
    const rv = api.get('v1', 'Node', NODE)?.['metadata'].resourceVersion as string;
    const result = await handler()(job(), ctx());
    expect(result.outcome).toBe('succeeded');
    expect(patches()).toHaveLength(1);
    expect(patches()[0]?.contentType).toBe('application/json-patch+json');
    expect(patches()[0]?.body).toEqual([
      { op: 'test', path: '/metadata/resourceVersion', value: rv },
      { op: 'test', path: '/spec/taints/1', value: OOS },
      { op: 'remove', path: '/spec/taints/1' },
    ]);
    expect(api.get('v1', 'Node', NODE)?.['spec'].taints).toEqual([UNSCHEDULABLE, DEDICATED]);
    const events = api.requestsTo('POST', '/apis/events.k8s.io/v1/namespaces/default/events');
    expect(events.map((e) => (e.body as { reason: string }).reason)).toEqual(['OutOfServiceTaintReleased']);
    // Nothing else was written.
    expect(writes()).toHaveLength(2);
    expect(result.verification).toMatchObject({ ok: true });
  });

  it('takes a kubelet Rebooted Event after the taint as the power cycle when no boot was recorded at first sight', async () => {
    seedNode();
    api.put({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${NODE}.1`, namespace: 'default' },
      involvedObject: { kind: 'Node', name: NODE },
      reason: 'Rebooted',
      type: 'Warning',
      message: `Node ${NODE} has been rebooted, boot id: ${BOOT_NEW}`,
      lastTimestamp: ago(25 * 60),
    });
    const result = await handler()(job({ bootIdAtFirstSight: undefined }), ctx());
    expect(result.outcome).toBe('succeeded');
    expect(patches()).toHaveLength(1);
  });

  it('fails its test op when a taint is added between the re-check and the PATCH, removes nothing, and removes the right one when the job plans again', async () => {
    seedNode();
    const release = api.holdRequests(/^PATCH \/api\/v1\/nodes\//);
    const first = handler()(job(), ctx()).catch((e: unknown) => e);
    await expect.poll(() => patches().length).toBe(1);
    // Another controller puts a taint in front: the out-of-service one moves to index 2.
    const added = { key: 'example.com/maintenance', effect: 'NoSchedule' };
    const node = api.get('v1', 'Node', NODE)!;
    api.put({ ...node, apiVersion: 'v1', kind: 'Node', spec: { taints: [added, UNSCHEDULABLE, OOS, DEDICATED] } });
    const rv2 = api.get('v1', 'Node', NODE)?.['metadata'].resourceVersion as string;
    release();
    const err = await first;
    expect(err).toBeInstanceOf(RunbookFailedError);
    expect((err as Error).message).toMatch(/HTTP 422: the server rejected our request due to an error in our request/);
    expect(api.get('v1', 'Node', NODE)?.['spec'].taints).toEqual([added, UNSCHEDULABLE, OOS, DEDICATED]);

    const again = await handler()(job(), ctx());
    expect(again.outcome).toBe('succeeded');
    expect(patches()[1]?.body).toEqual(removeTaintPatch({ resourceVersion: rv2, index: 2, taint: OOS }));
    expect(api.get('v1', 'Node', NODE)?.['spec'].taints).toEqual([added, UNSCHEDULABLE, DEDICATED]);
  });

  it("says in the step that removing the taint is Rook's unfence when a NetworkFence is named after the node", async () => {
    seedNode();
    api.absentGroups.delete('csiaddons.openshift.io');
    api.put({
      apiVersion: 'csiaddons.openshift.io/v1alpha1',
      kind: 'NetworkFence',
      metadata: { name: NODE },
      spec: { fenceState: 'Fenced', cidrs: ['10.0.0.2/32'] },
    });
    const err = await handler()(job(), { ...ctx(), mode: 'dry-run' }).catch((e: unknown) => e);
    const result = err instanceof Error ? undefined : (err as Awaited<ReturnType<ReturnType<typeof handler>>>);
    expect(result?.outcome).toBe('planned');
    expect(result?.steps.find((s) => s.id.startsWith('remove-taint:'))?.description).toMatch(/this step is also the Ceph unfence/);
    expect(patches()).toEqual([]);
  });

  it('lifts our own blocklist entry of the node before the taint, and never an entry we did not add', async () => {
    seedNode();
    const ours = '10.0.0.2:0/3710147553';
    const theirs = '10.0.0.2:0/0';
    let listed = [ours, theirs];
    const host = new FakeHost()
      .on(['ceph', 'osd', 'blocklist', 'ls'], () => ({ exitCode: 0, stdout: JSON.stringify(listed.map((addr) => ({ addr, until: '2026-12-07T10:00:00Z' }))) }))
      .on(['ceph', 'osd', 'blocklist', 'rm'], (argv) => {
        listed = listed.filter((a) => a !== argv[4]);
        return { exitCode: 0 };
      });
    const record = { node: NODE, job: 'rbd_kube_img_0123', addedAt: new Date().toISOString(), expirySeconds: 3600 };
    const undo: BlocklistUndo = { add: async () => undefined, forNode: async () => [{ ...record, address: ours }] };
    const result = await handler([residualClean()], { host, undo })(job(), ctx());
    expect(result.outcome).toBe('succeeded');
    expect(host.commands.filter((c) => c[3] === 'rm')).toEqual([['ceph', 'osd', 'blocklist', 'rm', ours]]);
    expect(listed).toEqual([theirs]);
    expect(result.steps.map((s) => s.id)).toEqual([`blocklist-rm:${ours}`, `remove-taint:${NODE}:${T0}`]);
    expect(patches()).toHaveLength(1);
  });
});

// Last on purpose: the writes are the KubeWrites port's (its own RBAC); every read the runbook
// made above is one src/adapters/kube/rbac.ts grants the cluster worker.
it('reads only what src/adapters/kube/rbac.ts allows the cluster worker', () => {
  expect(reads.length).toBeGreaterThan(50);
  expect(uncoveredByRbac(reads, 'cluster-worker')).toEqual([]);
  // And the other way: every read listed for this runbook was made.
  const made = new Set(reads.map((r) => apiCallOf(r)?.call));
  const listed = DIRECT_CALLS['cluster-worker']
    .filter((d) => d.usedBy.startsWith('out-of-service-taint-release') && !d.call.endsWith(' patch'))
    .map((d) => d.call);
  expect(listed.filter((c) => !made.has(c))).toEqual([]);
});
