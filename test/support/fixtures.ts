import { readFileSync } from 'node:fs';
import { InMemoryLookups, type PersistentVolumeInfo } from '../../src/kube/lookups.ts';
import type { Signal, SourceResult } from '../../src/signals/index.ts';
import { AlertmanagerPayload, alertmanagerSignals, KubeEventsBody, kubeEventSignals, NpdBody, npdSignals } from '../../src/sources/index.ts';

// The captured payloads in test/fixtures (see its README for where each format comes from), and the
// one path each source's body takes in the receiver: parse with the route's schema, then extract.

export type FixtureSource = 'alertmanager' | 'events' | 'npd';

const FIXTURES = new URL('../fixtures/', import.meta.url);

export function fixture(source: FixtureSource, name: string): unknown {
  return JSON.parse(readFileSync(new URL(`${source}/${name}.json`, FIXTURES), 'utf8'));
}

/** The receiver's default (config NODE_RECOVERY_ALERTS). */
export const NODE_RECOVERY_ALERTS: ReadonlySet<string> = new Set(['KubeNodeNotReady', 'KubeNodeUnreachable']);

/** Parse a body as its route does and extract signals; throws if the schema refuses it. */
export function signalsFrom(source: FixtureSource, body: unknown): SourceResult<Signal> {
  switch (source) {
    case 'alertmanager':
      return alertmanagerSignals(AlertmanagerPayload.parse(body), { nodeRecoveryAlerts: NODE_RECOVERY_ALERTS });
    case 'events':
      return kubeEventSignals(KubeEventsBody.parse(body));
    case 'npd':
      return npdSignals(NpdBody.parse(body));
    default: {
      const never: never = source;
      return never;
    }
  }
}

export const fixtureSignals = (source: FixtureSource, name: string): SourceResult<Signal> => signalsFrom(source, fixture(source, name));

/**
 * The PersistentVolumes the fixtures refer to, as the Kubernetes adapter would report them:
 * two Block Local PVs on worker-2 (the postgres disks), a Filesystem-mode Local PV on worker-3.
 */
export const FIXTURE_PVS: readonly PersistentVolumeInfo[] = [
  { name: 'local-pv-1', volumeMode: 'Block', local: { path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' }, claim: { namespace: 'db', name: 'data-postgres-0' } },
  { name: 'local-pv-2', volumeMode: 'Block', local: { path: '/dev/disk/by-id/wwn-0x5000c500deadbeef', node: 'worker-2' }, claim: { namespace: 'db', name: 'wal-postgres-0' } },
  { name: 'local-pv-fs-1', volumeMode: 'Filesystem', local: { path: '/dev/disk/by-id/wwn-0x5000c500feedf00d', node: 'worker-3' }, claim: { namespace: 'logging', name: 'data-elasticsearch-data-2' } },
];

export const fixtureLookups = (): InMemoryLookups => new InMemoryLookups(FIXTURE_PVS);
