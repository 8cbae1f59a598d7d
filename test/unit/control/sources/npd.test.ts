import { describe, expect, it } from 'vitest';
import type { Signal } from '../../../../src/core/signals/index.ts';
import { fixtureSignals } from '../../../support/fixtures.ts';

// node-problem-detector: its Events on the Node, and node conditions posted as {node, conditions}.
// The LocalDiskLost message is ours (deploy/npd): `local PV <pv>: <path> is missing|present`, joined by `; `.

type Case = { name: string; fixture: string; signals: Partial<Signal>[]; ignored: { reason: string; index?: number }[] };

const CASES: Case[] = [
  {
    name: 'reads every lost disk of a LocalDiskLost condition and ignores the other conditions',
    fixture: 'local-disk-lost.conditions',
    signals: [
      { kind: 'local-device-missing', pv: 'local-pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' },
      { kind: 'local-device-missing', pv: 'local-pv-2', path: '/dev/disk/by-id/wwn-0x5000c500deadbeef', node: 'worker-2' },
    ],
    ignored: [{ reason: 'condition-not-relevant', index: 0 }],
  },
  {
    name: 'reads a LocalDiskLost Event on the Node',
    fixture: 'local-disk-lost.event',
    signals: [{ kind: 'local-device-missing', pv: 'local-pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: 'reads a cleared LocalDiskLost that names its disk as restored',
    fixture: 'local-disk-restored.conditions',
    signals: [{ kind: 'local-device-restored', pv: 'local-pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: 'ignores LocalDiskLost back at its default state, which names no disk',
    fixture: 'local-disk-cleared-default.conditions',
    signals: [],
    ignored: [{ reason: 'restore-names-no-device', index: 0 }],
  },
  {
    name: 'ignores a KernelDeadlock condition',
    fixture: 'kernel-deadlock.conditions',
    signals: [],
    ignored: [{ reason: 'condition-not-relevant', index: 0 }],
  },
  {
    name: 'ignores a KernelDeadlock problem reported as an Event',
    fixture: 'kernel-deadlock.event',
    signals: [],
    ignored: [{ reason: 'event-reason-not-relevant', index: 0 }],
  },
  {
    name: "reads NPD's ReadonlyFilesystem=True (FilesystemIsReadOnly) as a read-only file system on its node, naming no device",
    fixture: 'readonly-filesystem.conditions',
    signals: [{ kind: 'filesystem-readonly', node: 'worker-3' }],
    ignored: [{ reason: 'condition-not-relevant', index: 0 }],
  },
  {
    name: 'ignores ReadonlyFilesystem at its default (FilesystemIsNotReadOnly)',
    fixture: 'readonly-filesystem-not.conditions',
    signals: [],
    ignored: [{ reason: 'condition-not-relevant', index: 0 }],
  },
  {
    name: "reads the kernel monitor's FilesystemIsReadOnly Event on the Node",
    fixture: 'readonly-filesystem.event',
    signals: [{ kind: 'filesystem-readonly', node: 'worker-3' }],
    ignored: [],
  },
  {
    name: "reads the kernel monitor's XfsHasShutdown Event on the Node",
    fixture: 'xfs-shutdown.event',
    signals: [{ kind: 'filesystem-readonly', node: 'worker-4' }],
    ignored: [],
  },
  {
    name: 'does not believe a FilesystemIsReadOnly Event written in a tenant namespace',
    fixture: 'forged-readonly-filesystem-tenant.event',
    signals: [],
    ignored: [{ reason: 'event-namespace-not-trusted', index: 0 }],
  },
  {
    // NPD cuts plugin output at max_output_length (80 by default): the entry is torn, so no PV is named
    // and the torn path cannot match any PV's exact path in triage.
    name: 'reads a message NPD cut short as a path without a PV',
    fixture: 'local-disk-lost-truncated-output.conditions',
    signals: [{ kind: 'local-device-missing', path: '/dev/disk/by-id/nvme-SAMSUNG_MZQL23T8HCLS-00A0', node: 'worker-2' }],
    ignored: [],
  },
  {
    name: "reads kubelet's structured orphaned-pod line from NPD's kubelet monitor",
    fixture: 'orphaned-pod-volumes-klog.event',
    signals: [
      {
        kind: 'orphaned-pod-volumes',
        node: 'worker-2',
        podUid: '84344a7e-8003-462a-9321-a3f6c45e530f',
        identity: ['orphan', 'worker-2', '84344a7e-8003-462a-9321-a3f6c45e530f'],
      },
    ],
    ignored: [],
  },
  {
    name: "reads kubelet's glog orphaned-pod line (up to 1.19)",
    fixture: 'orphaned-pod-volumes-glog.event',
    signals: [{ kind: 'orphaned-pod-volumes', node: 'worker-2', podUid: '626ab649-26c0-11e9-a791-001517ac3898' }],
    ignored: [],
  },
  {
    name: 'ignores an orphaned-pod line whose UID is not one',
    fixture: 'orphaned-pod-volumes-no-uid.event',
    signals: [],
    ignored: [{ reason: 'event-message-not-recognised', index: 0 }],
  },
  {
    name: 'ignores an OrphanedPodVolumes Event written outside NPD’s namespace',
    fixture: 'forged-orphaned-pod-volumes-tenant.event',
    signals: [],
    ignored: [{ reason: 'event-namespace-not-trusted', index: 0 }],
  },
];

describe('node-problem-detector source', () => {
  it.each(CASES)('$name', ({ fixture: name, signals, ignored }) => {
    const r = fixtureSignals('npd', name);
    expect(r.signals).toMatchObject(signals);
    expect(r.ignored.map(({ reason, index }) => (index === undefined ? { reason } : { reason, index }))).toEqual(ignored);
    expect([...r.signals.map((s) => s.evidence.source), ...r.ignored.map((i) => i.source)].every((s) => s === 'npd')).toBe(true);
  });

  it('gives each lost disk of one condition its own identity', () => {
    const [a, b] = fixtureSignals('npd', 'local-disk-lost.conditions').signals;
    expect(a?.identity).not.toEqual(b?.identity);
  });

  it('reads a truncated message without inventing a PV name for the torn entry', () => {
    const [s] = fixtureSignals('npd', 'local-disk-lost-truncated-output.conditions').signals;
    expect(s && 'pv' in s ? s.pv : undefined).toBeUndefined();
  });
});
