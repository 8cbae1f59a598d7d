import { describe, expect, it } from 'vitest';
import { judgeEvidence } from '../../../../../workers/engine/judge-evidence.ts';
import { plan } from '../../../../../workers/runbooks/readonly-filesystem-recovery/plan.ts';
import { AT, device, facts, pod, STAGING, UID } from './facts.fixture.ts';

const POLICY = { pathsBackMs: 120_000 };
const reasonsOf = (p: ReturnType<typeof plan>): string[] => (p.kind === 'refuse' ? p.reasons.map((r) => r.slice(0, r.indexOf(':'))) : []);

describe('readonly-filesystem-recovery plan', () => {
  it('deletes the controller-owned pod of a stopped file system whose paths are back, high risk, with every claim as evidence', () => {
    const p = plan(facts(), POLICY);
    expect(p.kind).toBe('steps');
    if (p.kind !== 'steps') return;
    expect(p.steps).toHaveLength(1);
    const [step] = p.steps;
    expect(step).toMatchObject({
      id: `delete-pod:shop/db-0:${UID}`,
      kind: 'delete-pod',
      risk: 'high',
      destructive: true,
      device: 'dm-0',
      majorMinor: '253:0',
      map: 'mpatha',
      pod: { namespace: 'shop', name: 'db-0', uid: UID, resourceVersion: '4711' },
      pv: 'pvc-1',
      kernelLine: 'EXT4-fs (dm-0): Remounting filesystem read-only',
    });
    expect(step?.evidence?.every((e) => e.status === 'holds')).toBe(true);
    expect(step?.evidence?.map((e) => e.claim)).toEqual([
      expect.stringContaining('the kernel stopped the file system on dm-0'),
      expect.stringContaining('nobody asked for dm-0 read-only'),
      expect.stringContaining('the kernel reported an error for dm-0 in this boot after its mount'),
      expect.stringContaining("dm-0 is a PV's device"),
      expect.stringContaining('every path of mpatha (dm-0) is active ready running'),
      expect.stringContaining('a direct read of dm-0 answers'),
      expect.stringContaining('owned by StatefulSet db'),
    ]);
    // Two looks 3 minutes apart: the healthy-over-time claim has matured.
    expect(judgeEvidence(step!, new Date(AT))).toEqual({ kind: 'go' });
  });

  it('makes the step wait while the device has been back for less than READONLY_PATHS_BACK_SECONDS or over one look only', () => {
    const p = plan(facts({}, { healthySince: { since: '2026-12-07T09:59:30.000Z', samples: 1 } }), POLICY);
    if (p.kind !== 'steps') throw new Error(p.kind);
    const judged = judgeEvidence(p.steps[0]!, new Date(AT));
    expect(judged).toMatchObject({ kind: 'wait', until: new Date('2026-12-07T10:01:30.000Z') });
  });

  it('accepts emergency_ro (newer kernels) as much as ro in the super options', () => {
    const mounts = device().mounts.map((m) => ({ ...m, superOptions: ['rw', 'errors=remount-ro', 'emergency_ro'] }));
    expect(plan(facts({}, { mounts }), POLICY).kind).toBe('steps');
  });

  it("takes the kernel's read-only remount of the device after this mount where mountinfo shows rw (Debian 12's 6.1, measured in the lab)", () => {
    const mounts = device().mounts.map((m) => ({ ...m, superOptions: ['rw', 'errors=remount-ro', 'stripe=512'] }));
    const p = plan(facts({}, { mounts }), POLICY);
    expect(p.kind).toBe('steps');
    if (p.kind === 'steps') expect(p.steps[0]?.evidence?.[0]?.detail).toContain('EXT4-fs (dm-0): Remounting filesystem read-only');
  });

  it('has nothing to do when the super options say rw and the kernel logged no read-only remount after this mount (mount-not-readonly)', () => {
    const mounts = device().mounts.map((m) => ({ ...m, superOptions: ['rw', 'errors=remount-ro'] }));
    const d = device();
    const kernel = d.kernel.ok ? { ...d.kernel, lines: d.kernel.lines.filter((l) => l.kind !== 'ext4-remount-ro') } : d.kernel;
    const p = plan(facts({}, { mounts, kernel }), POLICY);
    expect(p).toMatchObject({ kind: 'nothing-to-do', summary: expect.stringMatching(/^mount-not-readonly: /) });
    expect(plan(facts({ devices: [] }), POLICY).kind).toBe('nothing-to-do');
  });

  it.each([
    ['a mount asked for ro', { mounts: device().mounts.map((m) => (m.role === 'publish' ? { ...m, mountOptions: ['ro', 'relatime'] } : m)) }],
    ['a read-only PV', { pvs: [{ name: 'pvc-1', readOnly: true, claim: { namespace: 'shop', name: 'data-db-0' } }] }],
    ['a pod using its claim read-only', { pods: [pod({ readOnlyClaims: ['data-db-0'] })] }],
  ])('refuses readonly-requested: %s', (_what, over) => {
    expect(reasonsOf(plan(facts({}, over), POLICY))).toEqual(['readonly-requested']);
  });

  it('refuses no-kernel-error-for-device when no line names the device after its mount and errors_count is 0 (an admin may have remounted it)', () => {
    const d = device();
    const kernel = d.kernel.ok ? { ...d.kernel, lines: d.kernel.lines.filter((l) => l.kind === 'ext4-mounted' || l.kind === 'block-io-error') } : d.kernel;
    expect(reasonsOf(plan(facts({}, { kernel, sysfs: { errorsCount: 0, lastErrorTime: 0, remountRo: true } }), POLICY))).toEqual([
      'no-kernel-error-for-device',
    ]);
    // An error of an earlier mount of the device does not count.
    const earlier = d.kernel.ok ? { ...d.kernel, mountedAt: '2026-12-07T09:55:00.000Z' } : d.kernel;
    expect(reasonsOf(plan(facts({}, { kernel: earlier, sysfs: { errorsCount: 0, lastErrorTime: 0, remountRo: true } }), POLICY))).toEqual([
      'no-kernel-error-for-device',
    ]);
  });

  it('takes sysfs errors_count when the kernel log is unreadable, and refuses kernel-log-unknown when neither tells', () => {
    const kernel = { ok: false as const, why: 'journalctl: exit code 1' };
    expect(plan(facts({}, { kernel }), POLICY).kind).toBe('steps');
    expect(reasonsOf(plan(facts({}, { kernel, sysfs: { errorsCount: null, lastErrorTime: null, remountRo: null } }), POLICY))).toEqual(['kernel-log-unknown']);
  });

  it('refuses paths-still-dead while a path of the map is not active, without reading the device', () => {
    const health = {
      kind: 'multipath' as const,
      map: 'mpatha',
      paths: ['sda', 'sdb'].map((dev) => ({ hctl: null, dev, devT: null, dmState: 'failed', checkerState: 'faulty', onlineState: 'running' })),
    };
    const probe = { outcome: 'not-run' as const, durationMs: 0, exitCode: null, stuckPids: [], detail: 'not read: a path is not active' };
    const p = plan(facts({}, { health, probe, healthySince: null }), POLICY);
    expect(reasonsOf(p)).toEqual(['paths-still-dead']);
    expect(p.kind === 'refuse' && p.reasons[0]).toContain('sda failed faulty running');
  });

  it('refuses device-unreadable when the direct read fails or hangs', () => {
    const probe = { outcome: 'timed-out' as const, durationMs: 10_000, exitCode: null, stuckPids: [4242], detail: 'no answer within 10000 ms, abandoned' };
    expect(reasonsOf(plan(facts({}, { probe, healthySince: null }), POLICY))).toEqual(['device-unreadable']);
  });

  it("refuses an RBD device: whether its client is blocklisted is not the node agent's to know", () => {
    expect(reasonsOf(plan(facts({}, { device: 'rbd0', rbd: true }), POLICY))).toEqual(['rbd-blocklist-unknown']);
  });

  it("refuses root-or-system-fs when the device also backs the node's own file systems", () => {
    expect(reasonsOf(plan(facts({}, { systemMounts: ['/var/lib/kubelet'] }), POLICY))).toEqual(['root-or-system-fs']);
  });

  it('reports a bare pod and never deletes it', () => {
    const { controller: _c, ...bare } = pod().pod!;
    const p = plan(facts({}, { pods: [{ uid: UID, pod: bare }] }), POLICY);
    expect(reasonsOf(p)).toEqual(['bare-pod']);
    expect(p.kind === 'refuse' && p.reasons[0]).toContain('shop/db-0');
  });

  it('refuses pod-not-on-node (a stale read) and pod-not-found', () => {
    expect(reasonsOf(plan(facts({}, { pods: [pod({ node: 'worker-2' })] }), POLICY))).toEqual(['pod-not-on-node']);
    expect(reasonsOf(plan(facts({}, { pods: [{ uid: UID, pod: null }] }), POLICY))).toEqual(['pod-not-found']);
  });

  it('plans no delete for a pod already terminating, and still verifies', () => {
    const p = plan(facts({}, { pods: [pod({ deletionTimestamp: '2026-12-07T09:59:00.000Z' })] }), POLICY);
    expect(p).toMatchObject({ kind: 'steps', steps: [], summary: expect.stringContaining('pod-already-terminating') });
  });

  it('refuses pods-unknown without access to the Kubernetes API', () => {
    expect(reasonsOf(plan(facts({ kube: { ok: false, why: 'no access to the Kubernetes API' } }, { pods: [], pvs: [] }), POLICY))).toEqual(['pods-unknown']);
  });

  it('refuses no-pod-uses-mount for a staging mount that no pod publishes', () => {
    expect(reasonsOf(plan(facts({}, { mounts: device().mounts.filter((m) => m.mountPoint === STAGING), pods: [] }), POLICY))).toEqual(['no-pod-uses-mount']);
  });
});
