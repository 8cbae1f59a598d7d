import type { DeviceFacts, PodFacts, ReadonlyFacts } from '../../../../../workers/runbooks/readonly-filesystem-recovery/facts.ts';

// Facts of a node whose ext4 PV on mpatha (dm-0) the kernel stopped after every path died, and
// whose paths came back: the positive case every refusal test changes one thing of.

export const NODE = 'worker-1';
export const UID = '7c1e9a52-3d4b-4f6e-8a9b-0c1d2e3f4a5b';
export const KUBELET = '/var/lib/kubelet';
export const STAGING = `${KUBELET}/plugins/kubernetes.io/csi/driver.example.com/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/globalmount`;
export const PUBLISH = `${KUBELET}/pods/${UID}/volumes/kubernetes.io~csi/pvc-1/mount`;
export const AT = '2026-12-07T10:00:00.000Z';

export function pod(over: Partial<NonNullable<PodFacts['pod']>> = {}): PodFacts {
  return {
    uid: UID,
    pod: {
      namespace: 'shop',
      name: 'db-0',
      node: NODE,
      resourceVersion: '4711',
      controller: { kind: 'StatefulSet', name: 'db' },
      claims: ['data-db-0'],
      readOnlyClaims: [],
      ...over,
    },
  };
}

export function device(over: Partial<DeviceFacts> = {}): DeviceFacts {
  return {
    device: 'dm-0',
    majorMinor: '253:0',
    fsType: 'ext4',
    mounts: [
      {
        id: 300,
        mountPoint: STAGING,
        role: 'staging',
        driver: 'driver.example.com',
        mountOptions: ['rw', 'relatime'],
        superOptions: ['ro', 'errors=remount-ro'],
      },
      { id: 301, mountPoint: PUBLISH, role: 'publish', podUid: UID, pv: 'pvc-1', mountOptions: ['rw', 'relatime'], superOptions: ['ro', 'errors=remount-ro'] },
    ],
    systemMounts: [],
    rbd: false,
    kernel: {
      ok: true,
      mountedAt: '2026-12-07T09:00:00.000Z',
      truncated: false,
      lines: [
        {
          kind: 'ext4-mounted',
          device: 'dm-0',
          at: '2026-12-07T09:00:00.000Z',
          bootId: 'b1',
          message: 'EXT4-fs (dm-0): mounted filesystem with ordered data mode.',
        },
        { kind: 'block-io-error', device: 'sdb', at: '2026-12-07T09:50:00.000Z', bootId: 'b1', message: 'I/O error, dev sdb, sector 2048 op 0x1:(WRITE)' },
        {
          kind: 'ext4-error',
          device: 'dm-0',
          at: '2026-12-07T09:50:01.000Z',
          bootId: 'b1',
          message: 'EXT4-fs error (device dm-0): ext4_journal_check_start:83: comm dd: Detected aborted journal',
        },
        { kind: 'ext4-remount-ro', device: 'dm-0', at: '2026-12-07T09:50:01.000Z', bootId: 'b1', message: 'EXT4-fs (dm-0): Remounting filesystem read-only' },
      ],
    },
    sysfs: { errorsCount: 1, lastErrorTime: 1_796_637_001, remountRo: true },
    health: {
      kind: 'multipath',
      map: 'mpatha',
      paths: ['sda', 'sdb', 'sdc'].map((dev) => ({ hctl: '2:0:0:0', dev, devT: '8:0', dmState: 'active', checkerState: 'ready', onlineState: 'running' })),
    },
    probe: { outcome: 'readable', durationMs: 3, exitCode: 0, stuckPids: [], detail: 'read 1 MiB' },
    healthySince: { since: '2026-12-07T09:57:00.000Z', samples: 2 },
    pods: [pod()],
    pvs: [{ name: 'pvc-1', readOnly: false, claim: { namespace: 'shop', name: 'data-db-0' } }],
    ...over,
  };
}

export function facts(over: Partial<ReadonlyFacts> = {}, dev: Partial<DeviceFacts> = {}): ReadonlyFacts {
  return { node: NODE, observedAt: AT, bootId: 'b1', kube: { ok: true }, devices: [device(dev)], notes: [], ...over };
}
