import { readFileSync } from 'node:fs';
import { InMemoryLookups, type PersistentVolumeInfo } from '../../src/adapters/kube/lookups.ts';
import type { Signal, SourceResult } from '../../src/core/signals/index.ts';
import {
  AlertmanagerPayload,
  alertmanagerSignals,
  DEFAULT_EVENT_TRUST,
  KubeEventsBody,
  kubeEventSignals,
  NpdBody,
  npdSignals,
} from '../../src/control/sources/index.ts';

// The captured payloads in test/fixtures (see its README for where each format comes from), and the
// one path each source's body takes in the receiver: parse with the route's schema, then extract.

export type FixtureSource = 'alertmanager' | 'events' | 'npd';

const FIXTURES = new URL('../fixtures/', import.meta.url);

export function fixture(source: FixtureSource, name: string): unknown {
  return JSON.parse(readFileSync(new URL(`${source}/${name}.json`, FIXTURES), 'utf8'));
}

/** The receiver's default (config NODE_RECOVERY_ALERTS). */
const NODE_RECOVERY_ALERTS: ReadonlySet<string> = new Set(['KubeNodeNotReady', 'KubeNodeUnreachable']);

/** Parse a body as its route does and extract signals; throws if the schema refuses it. */
export function signalsFrom(source: FixtureSource, body: unknown): SourceResult<Signal> {
  switch (source) {
    case 'alertmanager':
      return alertmanagerSignals(AlertmanagerPayload.parse(body), { nodeRecoveryAlerts: NODE_RECOVERY_ALERTS });
    case 'events':
      return kubeEventSignals(KubeEventsBody.parse(body), DEFAULT_EVENT_TRUST);
    case 'npd':
      return npdSignals(NpdBody.parse(body), DEFAULT_EVENT_TRUST);
    default: {
      const never: never = source;
      return never;
    }
  }
}

export const fixtureSignals = (source: FixtureSource, name: string): SourceResult<Signal> => signalsFrom(source, fixture(source, name));

/**
 * The PersistentVolumes the fixtures refer to, as the Kubernetes adapter would report them:
 * two Block Local PVs on worker-2 (the postgres disks), a Filesystem-mode Local PV on worker-3,
 * and the RBD images of the "still being used" events (ceph-csi and in-tree).
 */
const FIXTURE_PVS: readonly PersistentVolumeInfo[] = [
  {
    name: 'local-pv-1',
    volumeMode: 'Block',
    local: { path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' },
    claim: { namespace: 'db', name: 'data-postgres-0' },
  },
  {
    name: 'local-pv-2',
    volumeMode: 'Block',
    local: { path: '/dev/disk/by-id/wwn-0x5000c500deadbeef', node: 'worker-2' },
    claim: { namespace: 'db', name: 'wal-postgres-0' },
  },
  {
    name: 'local-pv-fs-1',
    volumeMode: 'Filesystem',
    local: { path: '/dev/disk/by-id/wwn-0x5000c500feedf00d', node: 'worker-3' },
    claim: { namespace: 'logging', name: 'data-elasticsearch-data-2' },
  },
  {
    name: 'pvc-3f1e0f6a-grafana',
    volumeMode: 'Filesystem',
    claim: { namespace: 'monitoring', name: 'kube-prometheus-grafana' },
    rbd: { pool: 'k8s-dev', image: 'csi-vol-dea80a4e-85b6-46e2-9d08-ffba10ef7825' },
  },
  {
    name: 'pvc-0a7c44e1-raw-block',
    volumeMode: 'Block',
    claim: { namespace: 'default', name: 'raw-block-pvc' },
    rbd: { pool: 'replicapool', image: 'csi-vol-657f4f6d-216c-4ce3-8180-ccc4980b112b' },
  },
  {
    name: 'pvc-b839dd3e-3772-11ea-9c8c-246e968203b8',
    volumeMode: 'Filesystem',
    claim: { namespace: 'gitlab-runner', name: 'runner-cache' },
    rbd: { pool: 'test-k8s-radis', image: 'kubernetes-dynamic-pvc-b839dd3e-3772-11ea-9c8c-246e968203b8' },
  },
];

/**
 * The pods of the fixtures' Pod Events and their claims, each bound to its PV both ways: triage
 * acts on a Pod Event only when the cluster confirms the pod uses the volume (src/control/triage).
 */
const FIXTURE_PODS: ReadonlyArray<{ namespace: string; name: string; node: string; claims: Record<string, string> }> = [
  { namespace: 'db', name: 'postgres-0', node: 'worker-2', claims: { 'data-postgres-0': 'local-pv-1', 'wal-postgres-0': 'local-pv-2' } },
  { namespace: 'logging', name: 'elasticsearch-data-2', node: 'worker-3', claims: { 'data-elasticsearch-data-2': 'local-pv-fs-1' } },
  {
    namespace: 'monitoring',
    name: 'kube-prometheus-grafana-74bfb88f64-tctbf',
    node: 'k8s-dev-worker0',
    claims: { 'kube-prometheus-grafana': 'pvc-3f1e0f6a-grafana' },
  },
  { namespace: 'default', name: 'pod-with-raw-block-volume-2', node: 'worker-2', claims: { 'raw-block-pvc': 'pvc-0a7c44e1-raw-block' } },
  {
    namespace: 'gitlab-runner',
    name: 'runner--uxj6btw-project-38393-concurrent-0t9h6x',
    node: 'k8s-node-17',
    claims: { 'runner-cache': 'pvc-b839dd3e-3772-11ea-9c8c-246e968203b8' },
  },
];

/** The PVs alone: a cluster that knows the volumes but none of the pods. */
export const fixtureVolumeLookups = (): InMemoryLookups => new InMemoryLookups(FIXTURE_PVS);

export function fixtureLookups(): InMemoryLookups {
  const lookups = fixtureVolumeLookups();
  for (const p of FIXTURE_PODS) {
    lookups.addPod({ namespace: p.namespace, name: p.name, node: p.node, phase: 'Pending', claims: Object.keys(p.claims), waiting: [] });
    for (const [claim, pv] of Object.entries(p.claims))
      lookups.addClaim({ namespace: p.namespace, name: claim, volumeName: pv, accessModes: ['ReadWriteOnce'] });
  }
  return lookups;
}
