import { describe, expect, it } from 'vitest';
import type { Signal } from '../../../../src/core/signals/index.ts';
import { fixture, fixtureSignals, signalsFrom } from '../../../support/fixtures.ts';

// Kubernetes Events as kubernetes-event-exporter's webhook sends them (core/v1 + clusterName) and
// as events.k8s.io/v1, one object or an array (test/fixtures/events).

type Case = { name: string; fixture: string; signals: Partial<Signal>[]; ignored: string[] };

const CASES: Case[] = [
  // class 1: the node is back
  {
    name: "reads the node and boot id from kubelet's Rebooted event",
    fixture: 'node-rebooted.exporter',
    signals: [
      {
        kind: 'node-recovered',
        node: 'worker-1',
        bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26',
        identity: ['boot', 'worker-1', 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26'],
      },
    ],
    ignored: [],
  },
  {
    name: 'reads the same Rebooted event through events.k8s.io/v1',
    fixture: 'node-rebooted.events-v1',
    signals: [
      {
        kind: 'node-recovered',
        node: 'worker-1',
        bootId: 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26',
        identity: ['boot', 'worker-1', 'd87bdb0a-d2bc-42f7-945f-7a099da7ee26'],
      },
    ],
    ignored: [],
  },
  {
    name: "treats kubelet's NodeReady event as the node being back",
    fixture: 'node-ready.exporter',
    signals: [{ kind: 'node-recovered', node: 'worker-1', identity: ['event', '9e2f4b61-0c3d-4a7e-8b19-5f6a7c8d9e01'] }],
    ignored: [],
  },
  {
    name: 'ignores NodeNotReady: the node is going away, not coming back',
    fixture: 'node-not-ready.exporter',
    signals: [],
    ignored: ['event-reason-not-relevant'],
  },
  // class 3: rbd image still being used
  {
    name: 'reads pool and image from ceph-csi\'s "is still being used" on MountDevice',
    fixture: 'rbd-still-used-ceph-csi.exporter',
    signals: [
      {
        kind: 'rbd-image-busy',
        pool: 'k8s-dev',
        image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825',
        node: 'k8s-dev-worker0',
        pod: { namespace: 'monitoring', name: 'kube-prometheus-grafana-74bfb88f64-tctbf' },
      },
    ],
    ignored: [],
  },
  {
    name: 'reads pool and image from ceph-csi\'s "is still being used" on a raw block MapVolume (events.k8s.io/v1)',
    fixture: 'rbd-still-used-ceph-csi-map.events-v1',
    signals: [
      {
        kind: 'rbd-image-busy',
        pool: 'replicapool',
        image: 'csi-vol-657f4f6d-216c-4ce3-8180-ccc4980b112b',
        node: 'worker-2',
        pod: { namespace: 'default', name: 'pod-with-raw-block-volume-2' },
      },
    ],
    ignored: [],
  },
  {
    name: 'reads pool and image from the in-tree rbd plugin\'s "is still being used"',
    fixture: 'rbd-still-used-in-tree.exporter',
    signals: [
      {
        kind: 'rbd-image-busy',
        pool: 'test-k8s-radis',
        image: 'kubernetes-dynamic-pvc-b839dd3e-3772-11ea-9c8c-246e968203b8',
        node: 'k8s-node-17',
      },
    ],
    ignored: [],
  },
  {
    name: 'ignores an rbd FailedMount about something else (map timed out)',
    fixture: 'rbd-map-timed-out.exporter',
    signals: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'ignores the provisioner failing to delete a busy image',
    fixture: 'rbd-delete-still-used.exporter',
    signals: [],
    ignored: ['event-reason-not-relevant'],
  },
  {
    name: 'refuses an image inside a RADOS namespace (pool/namespace/image)',
    fixture: 'rbd-still-used-rados-namespace.exporter',
    signals: [],
    ignored: ['invalid-name'],
  },
  // class 2: local PV whose device vanished
  {
    name: "reads PV and device link from FailedMapVolume's EvalHostSymlinks lstat error",
    fixture: 'local-pv-map-lstat-missing.exporter',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: 'passes on a missing path that is not under /dev/disk for triage to refuse',
    fixture: 'local-pv-map-lstat-missing-not-dev-disk.exporter',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-9', path: '/mnt/disks/ssd1', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: 'reads PV and path from NewMounter\'s "path does not exist" (events.k8s.io/v1)',
    fixture: 'local-pv-newmounter-path-missing.events-v1',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-fs-1', path: '/dev/disk/by-id/wwn-0x5000c500feedf00d', node: 'worker-3' }],
    ignored: [],
  },
  {
    name: "reads a directory-backed Local PV's missing path as it is",
    fixture: 'local-pv-newmounter-path-missing-directory.exporter',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-7f70b248', path: '/mnt/local/vol1', node: 'halfling-fidel' }],
    ignored: [],
  },
  {
    name: 'ignores a FailedMount for an NFS volume',
    fixture: 'nfs-mount-failed.exporter',
    signals: [],
    ignored: ['event-message-not-recognised'],
  },
  {
    name: 'reads the PV from the volumeDevices link dockerd refuses as "not a device node"',
    fixture: 'not-a-device-node-local-pv-dockerd.exporter',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-1', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: 'ignores "not a device node" for a CSI block volume',
    fixture: 'not-a-device-node-csi-volume-dockerd.exporter',
    signals: [],
    ignored: ['event-message-not-recognised'],
  },
  // containerd's CRI plugin names no path at all (see test/fixtures/README.md): only the pod, whose
  // Local PVs triage then looks up.
  {
    name: 'reads containerd\'s "not a device node", which names neither PV nor path, as the pod\'s',
    fixture: 'not-a-device-node-containerd.exporter',
    signals: [{ kind: 'local-device-missing', pod: { namespace: 'db', name: 'postgres-0' }, node: 'worker-2' }],
    ignored: [],
  },
];

describe('Kubernetes Event source', () => {
  it.each(CASES)('$name', ({ fixture: name, signals, ignored }) => {
    const r = fixtureSignals('events', name);
    expect(r.signals).toMatchObject(signals);
    expect(r.ignored.map((i) => i.reason)).toEqual(ignored);
    expect(r.signals.every((s) => s.evidence.source === 'k8s-event')).toBe(true);
  });

  it('reads core/v1 and events.k8s.io/v1 copies of one event into the same signal', () => {
    const [core] = fixtureSignals('events', 'node-rebooted.exporter').signals;
    const [v1] = fixtureSignals('events', 'node-rebooted.events-v1').signals;
    expect({ ...v1, evidence: undefined }).toEqual({ ...core, evidence: undefined });
  });

  it('takes the node from reportingInstance when a kubelet events.k8s.io/v1 event has no deprecatedSource', () => {
    const body = structuredClone(fixture('events', 'rbd-still-used-ceph-csi-map.events-v1')) as Record<string, unknown>;
    delete body['deprecatedSource'];
    const [s] = signalsFrom('events', body).signals;
    expect(s).toMatchObject({ kind: 'rbd-image-busy', node: 'worker-2' });
  });

  it('does not take a node from reportingInstance of a controller other than kubelet', () => {
    const body = structuredClone(fixture('events', 'rbd-still-used-ceph-csi-map.events-v1')) as Record<string, unknown>;
    delete body['deprecatedSource'];
    body['reportingController'] = 'attachdetach-controller';
    body['reason'] = 'FailedAttachVolume';
    const [s] = signalsFrom('events', body).signals;
    expect(s).toBeDefined();
    expect(s && 'node' in s ? s.node : undefined).toBeUndefined();
  });

  it('classifies every event of an array and says which one it ignored', () => {
    const r = fixtureSignals('events', 'batch.array');
    expect(r.signals.map((s) => s.kind)).toEqual(['node-recovered', 'rbd-image-busy', 'local-device-missing']);
    expect(r.ignored).toMatchObject([{ reason: 'event-reason-not-relevant', index: 1 }]);
  });

  it('keeps the event as evidence with its object and message', () => {
    const [s] = fixtureSignals('events', 'rbd-still-used-ceph-csi.exporter').signals;
    expect(s?.evidence.summary).toMatch(/^FailedMount on Pod\/monitoring\/kube-prometheus-grafana-74bfb88f64-tctbf: MountVolume\.MountDevice failed/);
    expect(s?.evidence.raw).toMatchObject({ clusterName: 'prod-eu-1', reason: 'FailedMount' });
  });
});
