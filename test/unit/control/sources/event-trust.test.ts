import { describe, expect, it } from 'vitest';
import type { Signal } from '../../../../src/core/signals/index.ts';
import { DEFAULT_EVENT_TRUST, type EventTrust, KubeEventsBody, kubeEventSignals, NpdBody, npdSignals } from '../../../../src/control/sources/index.ts';
import { fixture, fixtureSignals, type FixtureSource } from '../../../support/fixtures.ts';

// Which Events are believed (src/control/sources/event-trust.ts): each accepted reason from its real
// reporter, about the right kind of object, in the namespace that reporter writes it in. Every row
// is a captured Event (test/fixtures) with one field changed, so a row fails when that one check
// goes.

type Body = Record<string, any>;
type Row = {
  name: string;
  source?: FixtureSource;
  fixture: string;
  change?: (e: Body) => void;
  trust?: EventTrust;
  /** The signal it must make, or the reason it must be ignored for. */
  expect: Partial<Signal> | string;
};

const KUBELET_POD = 'rbd-still-used-ceph-csi.exporter';
const KUBELET_POD_V1 = 'rbd-still-used-ceph-csi-map.events-v1';
const KUBELET_NODE = 'node-rebooted.exporter';
const NPD_NODE = 'local-disk-lost.event';
const RBD = {
  kind: 'rbd-image-busy',
  pool: 'k8s-dev',
  image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825',
  pod: { namespace: 'monitoring', name: 'kube-prometheus-grafana-74bfb88f64-tctbf' },
} as const;
const REBOOTED = { kind: 'node-recovered', node: 'worker-1' } as const;
const LOST = { kind: 'local-device-missing', pv: 'local-pv-1', node: 'worker-2' } as const;

const ROWS: Row[] = [
  // reporters
  { name: "believes kubelet's FailedMount (source.component and reportingComponent kubelet)", fixture: KUBELET_POD, expect: RBD },
  {
    name: "believes an older kubelet's FailedMount with an empty reportingComponent",
    fixture: KUBELET_POD,
    change: (e) => {
      e['reportingComponent'] = '';
    },
    expect: RBD,
  },
  {
    name: "believes kubelet's FailedMapVolume through events.k8s.io/v1 (reportingController)",
    fixture: KUBELET_POD_V1,
    change: (e) => {
      delete e['deprecatedSource'];
    },
    expect: { kind: 'rbd-image-busy', pool: 'replicapool' },
  },
  {
    name: 'refuses FailedMount from a reporter other than kubelet',
    fixture: KUBELET_POD,
    change: (e) => {
      e['source'].component = 'csi-rbdplugin';
      e['reportingComponent'] = 'csi-rbdplugin';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses FailedMount whose reporter fields disagree (source kubelet, reportingComponent another)',
    fixture: KUBELET_POD,
    change: (e) => {
      e['reportingComponent'] = 'tenant-operator';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses FailedMount that names no reporter at all (kubectl create)',
    fixture: KUBELET_POD,
    change: (e) => {
      delete e['source'];
      e['reportingComponent'] = '';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses events.k8s.io/v1 FailedMapVolume from another controller',
    fixture: KUBELET_POD_V1,
    change: (e) => {
      e['reportingController'] = 'rook-ceph-operator';
      e['deprecatedSource'] = { component: 'rook-ceph-operator' };
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'believes FailedAttachVolume from the attach/detach controller',
    fixture: KUBELET_POD,
    change: (e) => {
      e['reason'] = 'FailedAttachVolume';
      e['source'] = { component: 'attachdetach-controller' };
      e['reportingComponent'] = 'attachdetach-controller';
    },
    expect: { kind: 'rbd-image-busy' },
  },
  {
    name: 'refuses FailedAttachVolume from kubelet',
    fixture: KUBELET_POD,
    change: (e) => {
      e['reason'] = 'FailedAttachVolume';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses a container Failed that kubelet did not report',
    fixture: 'not-a-device-node-local-pv-dockerd.exporter',
    change: (e) => {
      e['source'].component = 'kube-scheduler';
      e['reportingComponent'] = 'kube-scheduler';
    },
    expect: 'event-reporter-not-trusted',
  },
  { name: "believes kubelet's Rebooted", fixture: KUBELET_NODE, expect: REBOOTED },
  {
    name: 'refuses Rebooted from the node controller',
    fixture: KUBELET_NODE,
    change: (e) => {
      e['source'] = { component: 'node-controller' };
      e['reportingComponent'] = 'node-controller';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses NodeReady that names no reporter',
    fixture: 'node-ready.exporter',
    change: (e) => {
      delete e['source'];
      delete e['reportingComponent'];
    },
    expect: 'event-reporter-not-trusted',
  },
  { name: 'believes LocalDiskLost from the configured NPD monitor', source: 'npd', fixture: NPD_NODE, expect: LOST },
  {
    name: 'refuses LocalDiskLost from an NPD monitor not configured (kernel-monitor)',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['source'].component = 'kernel-monitor';
    },
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'believes LocalDiskLost from a monitor NPD_EVENT_SOURCES adds',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['source'].component = 'disk-monitor';
    },
    trust: { ...DEFAULT_EVENT_TRUST, npdSources: new Set(['disk-monitor']) },
    expect: LOST,
  },
  {
    name: 'refuses LocalDiskLost claimed by kubelet',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['source'].component = 'kubelet';
    },
    expect: 'event-reporter-not-trusted',
  },
  // involved object kind
  {
    name: 'refuses FailedMount about a ConfigMap',
    fixture: KUBELET_POD,
    change: (e) => {
      e['involvedObject'].kind = 'ConfigMap';
    },
    expect: 'event-wrong-object-kind',
  },
  {
    name: 'refuses FailedMount about a Node',
    fixture: KUBELET_POD,
    change: (e) => {
      e['involvedObject'] = { kind: 'Node', name: 'k8s-dev-worker0' };
      e['metadata'].namespace = 'default';
    },
    expect: 'event-wrong-object-kind',
  },
  {
    name: 'refuses FailedMount whose object has no kind',
    fixture: KUBELET_POD,
    change: (e) => {
      delete e['involvedObject'].kind;
    },
    expect: 'event-wrong-object-kind',
  },
  {
    name: 'refuses Rebooted about a Pod',
    fixture: KUBELET_NODE,
    change: (e) => {
      e['involvedObject'] = { kind: 'Pod', namespace: 'default', name: 'worker-1' };
    },
    expect: 'event-wrong-object-kind',
  },
  {
    name: 'refuses LocalDiskLost about a ConfigMap named like a node (in its own namespace)',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['involvedObject'] = { kind: 'ConfigMap', namespace: 'default', name: 'worker-2' };
    },
    expect: 'event-wrong-object-kind',
  },
  {
    name: "takes LocalDiskLost's node from the involved Node, not from source.host",
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['source'].host = 'worker-9';
    },
    expect: LOST,
  },
  // namespaces
  {
    name: "refuses a Pod's FailedMount that lives in another namespace than the pod",
    fixture: KUBELET_POD,
    change: (e) => {
      e['metadata'].namespace = 'tenant-a';
    },
    expect: 'event-namespace-not-trusted',
  },
  {
    name: "refuses a Pod's FailedMount whose own namespace is not given",
    fixture: KUBELET_POD,
    change: (e) => {
      delete e['metadata'].namespace;
    },
    expect: 'event-namespace-not-trusted',
  },
  {
    name: 'refuses Rebooted written in a tenant namespace',
    fixture: KUBELET_NODE,
    change: (e) => {
      e['metadata'].namespace = 'tenant-a';
      e['involvedObject'].namespace = 'tenant-a';
    },
    expect: 'event-namespace-not-trusted',
  },
  {
    name: 'refuses LocalDiskLost written in a tenant namespace',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['metadata'].namespace = 'tenant-a';
      e['involvedObject'].namespace = 'tenant-a';
    },
    expect: 'event-namespace-not-trusted',
  },
  {
    name: 'believes LocalDiskLost in the namespace NPD_EVENT_NAMESPACE names',
    source: 'npd',
    fixture: NPD_NODE,
    change: (e) => {
      e['metadata'].namespace = 'node-problem-detector';
    },
    trust: { ...DEFAULT_EVENT_TRUST, npdNamespace: 'node-problem-detector' },
    expect: LOST,
  },
  {
    name: 'refuses LocalDiskLost in `default` when NPD_EVENT_NAMESPACE names another',
    source: 'npd',
    fixture: NPD_NODE,
    trust: { ...DEFAULT_EVENT_TRUST, npdNamespace: 'node-problem-detector' },
    expect: 'event-namespace-not-trusted',
  },
  // the forged fixtures, as they are
  {
    name: 'refuses the forged LocalDiskLost "present" on a ConfigMap in a tenant namespace',
    fixture: 'forged-local-disk-restored-configmap.exporter',
    expect: 'event-wrong-object-kind',
  },
  {
    name: 'refuses the forged FailedMount from a reporter that is not kubelet',
    fixture: 'forged-rbd-still-used-wrong-reporter.exporter',
    expect: 'event-reporter-not-trusted',
  },
  {
    name: 'refuses the forged LocalDiskLost "present" about a Node written in a tenant namespace',
    source: 'npd',
    fixture: 'forged-local-disk-restored-node-tenant.event',
    expect: 'event-namespace-not-trusted',
  },
  // Believed here: only triage can tell (the pod does not use that image; test/unit/control/triage).
  {
    name: "passes the tenant pod's kubelet-looking FailedMount on for triage to confirm",
    fixture: 'forged-rbd-still-used-tenant.exporter',
    expect: { kind: 'rbd-image-busy', pod: { namespace: 'tenant-a', name: 'web-0' } },
  },
];

function run(row: Row) {
  const source = row.source ?? 'events';
  const body = structuredClone(fixture(source, row.fixture)) as Body;
  row.change?.(body);
  const trust = row.trust ?? DEFAULT_EVENT_TRUST;
  return source === 'npd' ? npdSignals(NpdBody.parse(body), trust) : kubeEventSignals(KubeEventsBody.parse(body), trust);
}

describe('Event trust', () => {
  it.each(ROWS)('$name', (row) => {
    const r = run(row);
    if (typeof row.expect === 'string') {
      expect(r.signals).toEqual([]);
      expect(r.ignored.map((i) => i.reason)).toEqual([row.expect]);
    } else {
      expect(r.ignored).toEqual([]);
      expect(r.signals).toMatchObject([row.expect]);
    }
  });

  it('says in the ignored detail who was expected and who reported it', () => {
    const [i] = run({ name: '', fixture: 'forged-rbd-still-used-wrong-reporter.exporter', expect: '' }).ignored;
    expect(i).toMatchObject({ source: 'k8s-event', detail: 'FailedMount reported by "csi-rbdplugin"; only kubelet is believed' });
    const [k] = run({ name: '', fixture: 'forged-local-disk-restored-configmap.exporter', expect: '' }).ignored;
    expect(k?.detail).toBe('LocalDiskLost is about a Node; this one is about kind "ConfigMap"');
  });

  it('checks every Event of an array on its own', () => {
    const batch = [
      fixture('events', KUBELET_POD),
      fixture('events', 'forged-rbd-still-used-wrong-reporter.exporter'),
      fixture('events', 'forged-local-disk-restored-configmap.exporter'),
    ];
    const r = kubeEventSignals(KubeEventsBody.parse(batch), DEFAULT_EVENT_TRUST);
    expect(r.signals).toMatchObject([RBD]);
    expect(r.ignored.map(({ reason, index }) => ({ reason, index }))).toEqual([
      { reason: 'event-reporter-not-trusted', index: 1 },
      { reason: 'event-wrong-object-kind', index: 2 },
    ]);
  });

  it('still reads every captured Event the fixtures hold as its real reporter wrote it', () => {
    for (const name of [
      'node-rebooted.events-v1',
      'node-ready.exporter',
      'local-pv-map-lstat-missing.exporter',
      'local-pv-newmounter-path-missing.events-v1',
      'not-a-device-node-containerd.exporter',
      'rbd-still-used-in-tree.exporter',
    ]) {
      const r = fixtureSignals('events', name);
      expect(r.ignored, name).toEqual([]);
      expect(r.signals.length, name).toBeGreaterThan(0);
    }
  });
});
