import { describe, expect, it } from 'vitest';
import { queueFor } from '../../../../src/core/catalogue/queues.ts';
import { InMemoryLookups } from '../../../../src/adapters/kube/lookups.ts';
import { triage } from '../../../../src/control/triage/index.ts';
import { fixture, fixtureLookups, fixtureSignals, fixtureVolumeLookups, signalsFrom, type FixtureSource } from '../../../support/fixtures.ts';

// The whole way from a captured payload to jobs: parse, extract signals, triage against the PVs
// the fixtures refer to. Each failure class has its trigger and near-miss twins; every payload part
// that makes no job says why (source and triage reasons together).

type JobExpect = { runbook: string; target: Record<string, unknown>; queue: string; action?: 'place' | 'release' };
type Case = { name: string; source: FixtureSource; fixture: string; jobs: JobExpect[]; ignored: string[] };

const residual = (node: string): JobExpect => ({ runbook: 'residual-multipath-cleanup', target: { node }, queue: `vm-node-{${node}}` });
const placeholder = (node: string, pv: string, path: string, action: 'place' | 'release' = 'place'): JobExpect => ({
  runbook: 'local-pv-placeholder',
  target: { node, pv, path },
  queue: `vm-node-{${node}}`,
  action,
});
const readonly = (node: string): JobExpect => ({ runbook: 'readonly-filesystem-recovery', target: { node }, queue: `vm-node-{${node}}` });
const rbd = (target: Record<string, unknown>): JobExpect => ({ runbook: 'rbd-stale-mapping', target, queue: 'vm-cluster-{cluster}' });

const PG_DISK = '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4';

const CASES: Case[] = [
  // 1. residual multipath devices after a node comes back
  {
    name: 'cleans residual multipath devices on the node whose KubeNodeNotReady resolved',
    source: 'alertmanager',
    fixture: 'kube-node-not-ready-resolved',
    jobs: [residual('worker-1')],
    ignored: [],
  },
  {
    name: 'does nothing while KubeNodeNotReady is still firing',
    source: 'alertmanager',
    fixture: 'kube-node-not-ready-firing',
    jobs: [],
    ignored: ['alert-still-firing'],
  },
  {
    name: 'makes one job per resolved node of a grouped alert and none for the node still down',
    source: 'alertmanager',
    fixture: 'grouped-several-nodes',
    jobs: [residual('worker-1'), residual('worker-2')],
    ignored: ['alert-still-firing'],
  },
  {
    name: 'does nothing for resolved alerts that are not node-recovery alerts',
    source: 'alertmanager',
    fixture: 'unrelated-alerts-resolved',
    jobs: [],
    ignored: ['alert-not-relevant', 'alert-not-relevant'],
  },
  {
    name: 'refuses node labels that are not node names',
    source: 'alertmanager',
    fixture: 'hostile-node-labels',
    jobs: [],
    ignored: ['alert-names-no-node', 'invalid-node-name', 'invalid-node-name'],
  },
  {
    name: 'cleans residual multipath devices on a node kubelet reports rebooted',
    source: 'events',
    fixture: 'node-rebooted.exporter',
    jobs: [residual('worker-1')],
    ignored: [],
  },
  {
    name: 'cleans residual multipath devices on a rebooted node seen through events.k8s.io/v1',
    source: 'events',
    fixture: 'node-rebooted.events-v1',
    jobs: [residual('worker-1')],
    ignored: [],
  },
  {
    name: 'cleans residual multipath devices on a node kubelet reports NodeReady',
    source: 'events',
    fixture: 'node-ready.exporter',
    jobs: [residual('worker-1')],
    ignored: [],
  },
  {
    name: 'does nothing for NodeNotReady',
    source: 'events',
    fixture: 'node-not-ready.exporter',
    jobs: [],
    ignored: ['event-reason-not-relevant'],
  },

  // 2. local PV whose device vanished
  {
    name: 'bridges a Local PV that kubelet cannot map because its by-id link is gone',
    source: 'events',
    fixture: 'local-pv-map-lstat-missing.exporter',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK)],
    ignored: [],
  },
  {
    name: 'bridges a Local PV whose link dockerd refuses as "not a device node", taking its path from the PV',
    source: 'events',
    fixture: 'not-a-device-node-local-pv-dockerd.exporter',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK)],
    ignored: [],
  },
  {
    name: 'bridges every disk a LocalDiskLost condition names',
    source: 'npd',
    fixture: 'local-disk-lost.conditions',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK), placeholder('worker-2', 'local-pv-2', '/dev/disk/by-id/wwn-0x5000c500deadbeef')],
    ignored: ['condition-not-relevant'],
  },
  {
    name: 'bridges the disk a LocalDiskLost Event names',
    source: 'npd',
    fixture: 'local-disk-lost.event',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK)],
    ignored: [],
  },
  {
    name: 'releases the placeholder when LocalDiskLost clears naming the disk',
    source: 'npd',
    fixture: 'local-disk-restored.conditions',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK, 'release')],
    ignored: [],
  },
  {
    name: 'does nothing for a missing Local PV path that is not under /dev/disk',
    source: 'events',
    fixture: 'local-pv-map-lstat-missing-not-dev-disk.exporter',
    jobs: [],
    ignored: ['path-not-a-device-link'],
  },
  {
    name: 'does nothing for a directory-backed Local PV whose path vanished',
    source: 'events',
    fixture: 'local-pv-newmounter-path-missing-directory.exporter',
    jobs: [],
    ignored: ['path-not-a-device-link'],
  },
  {
    name: 'does nothing for a Filesystem-mode Local PV whose device vanished',
    source: 'events',
    fixture: 'local-pv-newmounter-path-missing.events-v1',
    jobs: [],
    ignored: ['pv-not-local-block-device'],
  },
  {
    name: 'does nothing for a FailedMount of an NFS volume',
    source: 'events',
    fixture: 'nfs-mount-failed.exporter',
    jobs: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'does nothing for "not a device node" on a CSI block volume',
    source: 'events',
    fixture: 'not-a-device-node-csi-volume-dockerd.exporter',
    jobs: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'bridges every Local PV of the pod containerd refuses as "not a device node" (the message names no disk)',
    source: 'events',
    fixture: 'not-a-device-node-containerd.exporter',
    jobs: [placeholder('worker-2', 'local-pv-1', PG_DISK), placeholder('worker-2', 'local-pv-2', '/dev/disk/by-id/wwn-0x5000c500deadbeef')],
    ignored: [],
  },
  {
    name: "cleans the orphaned pod directory kubelet's line (through NPD's kubelet monitor) names, on that node",
    source: 'npd',
    fixture: 'orphaned-pod-volumes-klog.event',
    jobs: [{ runbook: 'orphaned-pod-volumes', target: { node: 'worker-2', podUid: '84344a7e-8003-462a-9321-a3f6c45e530f' }, queue: 'vm-node-{worker-2}' }],
    ignored: [],
  },
  {
    name: 'does nothing for an orphaned-pod line without a valid pod UID',
    source: 'npd',
    fixture: 'orphaned-pod-volumes-no-uid.event',
    jobs: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'does nothing for a disk path NPD cut short',
    source: 'npd',
    fixture: 'local-disk-lost-truncated-output.conditions',
    jobs: [],
    ignored: ['pv-unknown'],
  },
  {
    name: 'does nothing when LocalDiskLost clears without naming a disk',
    source: 'npd',
    fixture: 'local-disk-cleared-default.conditions',
    jobs: [],
    ignored: ['restore-names-no-device'],
  },
  {
    name: 'does nothing for a KernelDeadlock condition',
    source: 'npd',
    fixture: 'kernel-deadlock.conditions',
    jobs: [],
    ignored: ['condition-not-relevant'],
  },
  {
    name: 'does nothing for a KernelDeadlock Event',
    source: 'npd',
    fixture: 'kernel-deadlock.event',
    jobs: [],
    ignored: ['event-reason-not-relevant'],
  },

  {
    name: "asks node worker-3's agent to find and recover the file system NPD's ReadonlyFilesystem condition says went read-only",
    source: 'npd',
    fixture: 'readonly-filesystem.conditions',
    jobs: [readonly('worker-3')],
    ignored: ['condition-not-relevant'],
  },
  {
    name: 'asks for the same recovery on a FilesystemIsReadOnly Event',
    source: 'npd',
    fixture: 'readonly-filesystem.event',
    jobs: [readonly('worker-3')],
    ignored: [],
  },
  {
    name: 'asks for the same recovery on an XfsHasShutdown Event',
    source: 'npd',
    fixture: 'xfs-shutdown.event',
    jobs: [readonly('worker-4')],
    ignored: [],
  },
  {
    name: 'does nothing for ReadonlyFilesystem at its default',
    source: 'npd',
    fixture: 'readonly-filesystem-not.conditions',
    jobs: [],
    ignored: ['condition-not-relevant'],
  },

  // 3. RBD image still being used
  {
    name: 'locates the stale mapping of a ceph-csi image on the cluster queue',
    source: 'events',
    fixture: 'rbd-still-used-ceph-csi.exporter',
    jobs: [
      rbd({
        pool: 'k8s-dev',
        image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825',
        pod: { namespace: 'monitoring', name: 'kube-prometheus-grafana-74bfb88f64-tctbf' },
        node: 'k8s-dev-worker0',
      }),
    ],
    ignored: [],
  },
  {
    name: 'locates the stale mapping of a ceph-csi raw block image',
    source: 'events',
    fixture: 'rbd-still-used-ceph-csi-map.events-v1',
    jobs: [
      rbd({
        pool: 'replicapool',
        image: 'csi-vol-657f4f6d-216c-4ce3-8180-ccc4980b112b',
        pod: { namespace: 'default', name: 'pod-with-raw-block-volume-2' },
        node: 'worker-2',
      }),
    ],
    ignored: [],
  },
  {
    name: 'locates the stale mapping of an in-tree rbd image',
    source: 'events',
    fixture: 'rbd-still-used-in-tree.exporter',
    jobs: [
      rbd({
        pool: 'test-k8s-radis',
        image: 'kubernetes-dynamic-pvc-b839dd3e-3772-11ea-9c8c-246e968203b8',
        pod: { namespace: 'gitlab-runner', name: 'runner--uxj6btw-project-38393-concurrent-0t9h6x' },
        node: 'k8s-node-17',
      }),
    ],
    ignored: [],
  },
  {
    name: 'does nothing for an rbd map that timed out',
    source: 'events',
    fixture: 'rbd-map-timed-out.exporter',
    jobs: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'does nothing for a busy image the provisioner could not delete',
    source: 'events',
    fixture: 'rbd-delete-still-used.exporter',
    jobs: [],
    ignored: ['event-reason-not-relevant'],
  },
  {
    name: 'does nothing for an image inside a RADOS namespace',
    source: 'events',
    fixture: 'rbd-still-used-rados-namespace.exporter',
    jobs: [],
    ignored: ['invalid-name'],
  },

  // forged: Events anyone may create in their own namespace (see test/fixtures/README.md)
  {
    name: 'does nothing for a kubelet-looking "still being used" about a tenant pod that does not use the image',
    source: 'events',
    fixture: 'forged-rbd-still-used-tenant.exporter',
    jobs: [],
    ignored: ['pod-volume-unconfirmed'],
  },
  {
    name: 'does nothing for a "still being used" from a reporter that is not kubelet',
    source: 'events',
    fixture: 'forged-rbd-still-used-wrong-reporter.exporter',
    jobs: [],
    ignored: ['event-reporter-not-trusted'],
  },
  {
    name: 'releases no placeholder for a LocalDiskLost "present" on a ConfigMap',
    source: 'events',
    fixture: 'forged-local-disk-restored-configmap.exporter',
    jobs: [],
    ignored: ['event-wrong-object-kind'],
  },
  {
    name: 'releases no placeholder for a LocalDiskLost "present" about a Node written in a tenant namespace',
    source: 'npd',
    fixture: 'forged-local-disk-restored-node-tenant.event',
    jobs: [],
    ignored: ['event-namespace-not-trusted'],
  },

  // mixed
  {
    name: 'makes a job per failure class out of one array of events and ignores the rest',
    source: 'events',
    fixture: 'batch.array',
    jobs: [
      residual('worker-1'),
      rbd({
        pool: 'k8s-dev',
        image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825',
        pod: { namespace: 'monitoring', name: 'kube-prometheus-grafana-74bfb88f64-tctbf' },
        node: 'k8s-dev-worker0',
      }),
      placeholder('worker-2', 'local-pv-1', PG_DISK),
    ],
    ignored: ['event-reason-not-relevant'],
  },
  {
    name: 'refuses node, PV, path and image names that could escape into a shell or a path',
    source: 'events',
    fixture: 'hostile-names.array',
    jobs: [],
    ignored: ['invalid-node-name', 'invalid-name', 'path-not-a-device-link', 'invalid-node-name', 'invalid-name', 'invalid-node-name'],
  },
  {
    name: 'refuses a conditions report for a node name that is not one',
    source: 'npd',
    fixture: 'hostile-node.conditions',
    jobs: [],
    ignored: ['invalid-node-name', 'invalid-node-name'],
  },
];

describe('triage of captured payloads', () => {
  it.each(CASES)('$name', async ({ source, fixture, jobs, ignored }) => {
    const found = fixtureSignals(source, fixture);
    const r = await triage(found.signals, { lookups: fixtureLookups() });
    expect(
      r.jobs.map((j) => ({
        runbook: j.runbook,
        target: j.target,
        queue: queueFor(j),
        ...(j.runbook === 'local-pv-placeholder' ? { action: j.action } : {}),
      })),
    ).toEqual(jobs);
    expect([...found.ignored, ...r.ignored].map((i) => i.reason).sort()).toEqual([...ignored].sort());
    // every job says what caused it
    for (const j of r.jobs) expect(j.evidence.length).toBeGreaterThan(0);
  });

  it('trusts a PV, path and node NPD named about its own node when the cluster does not know the PV (the node agent re-checks)', async () => {
    const found = fixtureSignals('npd', 'local-disk-lost.event');
    const r = await triage(found.signals, { lookups: new InMemoryLookups() });
    expect(r.jobs.map((j) => j.target)).toEqual([{ node: 'worker-2', pv: 'local-pv-1', path: PG_DISK }]);
  });

  // A Pod's Event may come from any tenant's namespace: without a cluster that confirms the pod
  // uses the volume (no KUBE_WATCH: empty lookups), unknown means refuse.
  it.each([
    'local-pv-map-lstat-missing.exporter',
    'not-a-device-node-local-pv-dockerd.exporter',
    'not-a-device-node-containerd.exporter',
    'rbd-still-used-ceph-csi.exporter',
    'rbd-still-used-in-tree.exporter',
  ])('makes no job of the Pod Event %s when the cluster cannot confirm the pod uses the volume', async (name) => {
    const found = fixtureSignals('events', name);
    expect(found.signals).toHaveLength(1);
    const r = await triage(found.signals, { lookups: new InMemoryLookups() });
    expect(r.jobs).toEqual([]);
    expect(r.ignored.map((i) => i.reason)).toEqual(['pod-volume-unconfirmed']);
  });

  it('makes no job of a Pod Event naming a PV the cluster knows but the pod does not use', async () => {
    const found = fixtureSignals('events', 'local-pv-map-lstat-missing.exporter');
    const r = await triage(found.signals, { lookups: fixtureVolumeLookups() });
    expect(r.jobs).toEqual([]);
    expect(r.ignored).toEqual([
      expect.objectContaining({
        reason: 'pod-volume-unconfirmed',
        detail: expect.stringContaining('pod db/postgres-0 does not use PV local-pv-1'),
      }),
    ]);
  });

  it("makes no rbd job for a tenant pod whose Event names an image of another namespace's PV", async () => {
    // The grafana image, reported from a tenant's own namespace about a pod that exists there
    // and has a volume, just not that one.
    const body = structuredClone(fixture('events', 'rbd-still-used-ceph-csi.exporter')) as Record<string, any>;
    body['metadata']['namespace'] = 'tenant-a';
    body['involvedObject'] = { ...body['involvedObject'], namespace: 'tenant-a', name: 'innocent-0' };
    const found = signalsFrom('events', body);
    expect(found.signals).toHaveLength(1);
    const lookups = fixtureLookups()
      .addPod({ namespace: 'tenant-a', name: 'innocent-0', node: 'k8s-dev-worker0', claims: ['scratch'], waiting: [] })
      .addClaim({ namespace: 'tenant-a', name: 'scratch', volumeName: 'pvc-tenant-scratch', accessModes: ['ReadWriteOnce'] })
      .addPersistentVolume({
        name: 'pvc-tenant-scratch',
        volumeMode: 'Filesystem',
        claim: { namespace: 'tenant-a', name: 'scratch' },
        rbd: { pool: 'k8s-dev', image: 'csi-vol-tenant' },
      });
    const r = await triage(found.signals, { lookups });
    expect(r.jobs).toEqual([]);
    expect(r.ignored).toEqual([
      expect.objectContaining({
        reason: 'pod-volume-unconfirmed',
        detail: expect.stringContaining('pod tenant-a/innocent-0 uses no PV backed by rbd image k8s-dev/csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825'),
      }),
    ]);
  });

  it('bridges containerd\'s pathless "not a device node" through the Local PVs of the failing pod, not its other volumes', async () => {
    const found = fixtureSignals('events', 'not-a-device-node-containerd.exporter');
    const lookups = fixtureVolumeLookups()
      .addPod({
        namespace: 'db',
        name: 'postgres-0',
        node: 'worker-2',
        phase: 'Pending',
        claims: ['data-postgres-0', 'wal-postgres-0', 'config'],
        waiting: [],
      })
      .addClaim({ namespace: 'db', name: 'data-postgres-0', volumeName: 'local-pv-1', accessModes: ['ReadWriteOnce'] })
      .addClaim({ namespace: 'db', name: 'wal-postgres-0', volumeName: 'local-pv-2', accessModes: ['ReadWriteOnce'] })
      .addClaim({ namespace: 'db', name: 'config', volumeName: 'pvc-nfs-1', accessModes: ['ReadWriteMany'] })
      .addPersistentVolume({ name: 'pvc-nfs-1', volumeMode: 'Filesystem', claim: { namespace: 'db', name: 'config' } });
    const r = await triage(found.signals, { lookups });
    // Both Local PVs get a job; the agent places only where the path is really missing.
    expect(r.jobs.map((j) => j.target)).toEqual([
      { node: 'worker-2', pv: 'local-pv-1', path: PG_DISK },
      { node: 'worker-2', pv: 'local-pv-2', path: '/dev/disk/by-id/wwn-0x5000c500deadbeef' },
    ]);
    expect(r.ignored).toEqual([]);
  });

  it('does not bridge containerd\'s "not a device node" for a pod with only non-local volumes', async () => {
    const found = fixtureSignals('events', 'not-a-device-node-containerd.exporter');
    const lookups = fixtureVolumeLookups()
      .addPod({ namespace: 'db', name: 'postgres-0', node: 'worker-2', claims: ['config'], waiting: [] })
      .addClaim({ namespace: 'db', name: 'config', volumeName: 'pvc-csi-1', accessModes: ['ReadWriteOnce'] })
      .addPersistentVolume({
        name: 'pvc-csi-1',
        volumeMode: 'Block',
        claim: { namespace: 'db', name: 'config' },
        csi: { driver: 'rbd.csi.ceph.com', volumeHandle: 'x', attributes: {} },
      });
    const r = await triage(found.signals, { lookups });
    expect(r.jobs).toEqual([]);
    expect(r.ignored.map((i) => i.reason)).toEqual(['pod-volume-unconfirmed']);
  });
});
