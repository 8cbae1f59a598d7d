import { describe, expect, it } from 'vitest';
import { plan } from '../../../../../workers/runbooks/orphaned-pod-volumes/plan.ts';
import type { OrphanStep } from '../../../../../workers/runbooks/orphaned-pod-volumes/step.ts';
import type { UidFacts } from '../../../../../workers/runbooks/orphaned-pod-volumes/facts.ts';
import { DEV, facts, NODE, OBSERVED, PODS, tree, UID, UID2, uidFacts, volData } from './facts.fixture.ts';

const steps = (p: ReturnType<typeof plan>): OrphanStep[] => (p.kind === 'steps' ? p.steps : []);
const ids = (p: ReturnType<typeof plan>): string[] => steps(p).map((s) => s.id);
const reasons = (p: ReturnType<typeof plan>): string[] => (p.kind === 'refuse' ? p.reasons : []);
const refusedWith = (p: ReturnType<typeof plan>, reason: string): void => {
  expect(p.kind).toBe('refuse');
  expect(reasons(p).join('\n')).toContain(`${reason}: `);
};
const one = (over: Partial<UidFacts>) => plan(facts({ requestedUid: UID, candidates: [uidFacts(over)] }));

describe('orphaned-pod-volumes plan: the positive plan', () => {
  it('unlinks vol_data.json and kubelet files, then rmdirs every directory deepest first, pods/<uid> last', () => {
    const p = plan(facts());
    expect(ids(p)).toEqual([
      `unlink-vol-data:${UID}:pvc-1`,
      `unlink-kubelet-file:${UID}:containers/app/0a1b2c3d`,
      `unlink-kubelet-file:${UID}:etc-hosts`,
      `rmdir:${UID}:volumes/kubernetes.io~csi/pvc-1/mount`,
      `rmdir:${UID}:volumes/kubernetes.io~empty-dir/cache`,
      `rmdir:${UID}:volumes/kubernetes.io~csi/pvc-1`,
      `rmdir:${UID}:volumes/kubernetes.io~empty-dir`,
      `rmdir:${UID}:volumes/kubernetes.io~csi`,
      `rmdir:${UID}:containers/app`,
      `rmdir:${UID}:volumes`,
      `rmdir:${UID}:plugins`,
      `rmdir:${UID}:containers`,
      `rmdir:${UID}:.`,
    ]);
    // Deepest first, so every directory is empty when its turn comes.
    const depths = steps(p)
      .filter((s) => s.kind === 'rmdir')
      .map((s) => (s.rel === '' ? 0 : s.rel.split('/').length));
    expect(depths).toEqual([...depths].sort((a, b) => b - a));
    expect(steps(p).at(-1)).toMatchObject({ kind: 'rmdir', path: `${PODS}/${UID}`, podsDev: DEV });
  });

  it('gives every step evidence for each claim of §2.4, all holding, and the persistence of the sighting', () => {
    const s = steps(plan(facts()));
    for (const step of s) {
      expect(step.destructive).toBe(true);
      expect(step.risk).toBeUndefined();
      expect(step.evidence?.every((e) => e.status === 'holds' && e.observedAt === OBSERVED)).toBe(true);
      expect(step.evidence?.find((e) => e.persistence)?.persistence).toMatchObject({ mustHoldMs: 600_000, minSamples: 2, acrossBoot: false });
    }
    const claims = s[0]?.evidence?.map((e) => e.source) ?? [];
    expect(claims).toEqual(
      expect.arrayContaining(['pods list, all namespaces (Kubernetes API)', 'crictl pods -o json', '/proc/*/mountinfo', '/proc/*/{cwd,root,fd/*}']),
    );
    expect(s[0]?.evidence?.some((e) => e.claim.includes('is not staged on node'))).toBe(true);
  });

  it('volume-still-staged: leaves that volume directory and its vol_data.json; the rest of the UID still goes', () => {
    const p = one({ volData: [volData({ stagedAt: ['/var/lib/kubelet/plugins/kubernetes.io/csi/rbd.csi.ceph.com/abc/globalmount (mnt:[1])'] })] });
    expect(p.kind).toBe('steps');
    const rel = steps(p).map((s) => s.rel);
    expect(rel).not.toContain('volumes/kubernetes.io~csi/pvc-1/vol_data.json');
    expect(rel).not.toContain('volumes/kubernetes.io~csi/pvc-1/mount');
    expect(rel).not.toContain('volumes/kubernetes.io~csi/pvc-1');
    expect(rel).not.toContain('volumes/kubernetes.io~csi');
    expect(rel).not.toContain('volumes');
    expect(rel).not.toContain('');
    expect(rel).toEqual(expect.arrayContaining(['etc-hosts', 'volumes/kubernetes.io~empty-dir/cache', 'containers']));
    expect(p.kind === 'steps' && p.summary).toContain('volume-still-staged');
  });

  it('volume-still-staged also when a VolumeAttachment of the node names the PV, or when the attachments are unknown', () => {
    for (const attachedPvs of [
      { known: true as const, value: ['pvc-1'] },
      { known: false as const, why: 'API unreachable' },
    ]) {
      const p = plan(facts({ requestedUid: UID, attachedPvs }));
      expect(steps(p).some((s) => s.kind === 'unlink-vol-data')).toBe(false);
      expect(steps(p).some((s) => s.rel === '')).toBe(false);
    }
  });

  it('orders a young orphan after the mature ones and gives its steps a persistence claim (the engine waits, never refuses)', () => {
    const young = uidFacts({ uid: UID2, sighting: { since: '2026-12-07T09:59:00.000Z', samples: 1 } });
    const p = plan(facts({ candidates: [young, uidFacts()] }));
    expect(p.kind).toBe('steps');
    const uids = steps(p).map((s) => s.uid);
    expect(uids.indexOf(UID2)).toBeGreaterThan(uids.lastIndexOf(UID));
    const ev = steps(p)
      .find((s) => s.uid === UID2)
      ?.evidence?.find((e) => e.persistence);
    expect(ev).toMatchObject({ status: 'holds', persistence: { samples: 1, mustHoldMs: 600_000 } });
  });

  it('a scan job skips the pods the API server or the runtime knows: they are pods, not orphans', () => {
    const live = uidFacts({ uid: UID2, apiPod: { known: true, value: 'shop/web-0' } });
    const p = plan(facts({ candidates: [live, uidFacts()] }));
    expect(new Set(steps(p).map((s) => s.uid))).toEqual(new Set([UID]));
    expect(plan(facts({ candidates: [live] })).kind).toBe('nothing-to-do');
  });
});

describe('orphaned-pod-volumes plan: every claim is a named refusal reason', () => {
  it.each<[string, Partial<UidFacts>]>([
    ['pod-known-to-api', { apiPod: { known: true, value: 'shop/web-0' } }],
    ['pod-api-unknown', { apiPod: { known: false, why: 'connect ECONNREFUSED' } }],
    ['pod-known-to-runtime', { inRuntime: { known: true, value: true } }],
    ['runtime-unknown', { inRuntime: { known: false, why: 'crictl is not installed on the node' } }],
    [
      'mounted-in-namespace',
      {
        mounts: [
          {
            namespace: 'mnt:[4026532301]',
            host: false,
            pids: [{ pid: 4242, comm: 'sleep', podUid: null }],
            mountPoint: `${PODS}/${UID}/volumes/kubernetes.io~csi/pvc-1/mount`,
            root: '/',
            majorMinor: '253:3',
            how: 'at-or-under',
          },
        ],
      },
    ],
    [
      'bind-source-under-tree',
      {
        mounts: [
          {
            namespace: 'mnt:[4026532301]',
            host: false,
            pids: [{ pid: 7, comm: 'csi', podUid: null }],
            mountPoint: '/mnt/held',
            root: `/var/lib/kubelet/pods/${UID}/volumes`,
            majorMinor: '8:1',
            how: 'source-under',
          },
        ],
      },
    ],
    ['held-by-process', { holders: [{ pid: 99, comm: 'bash', link: 'cwd', target: `${PODS}/${UID}/volumes` }] }],
    ['loop-backed-by-file', { loops: ['/dev/loop7'] }],
    [
      'entry-not-ours',
      { tree: { known: true, value: [...tree(), { type: 'file', dev: DEV, size: 17, rel: 'volumes/kubernetes.io~empty-dir/cache/access.log' }] } },
    ],
    ['entry-not-ours', { tree: { known: true, value: [...tree(), { type: 'symlink', dev: DEV, size: 4, rel: 'etc-hosts2' }] } }],
    [
      'crosses-filesystem',
      { tree: { known: true, value: tree().map((e) => (e.rel === 'volumes/kubernetes.io~csi/pvc-1/mount' ? { ...e, dev: '64771' } : e)) } },
    ],
    ['vol-data-unreadable', { volData: [volData({ parsed: null, problem: 'not JSON', stagedAt: null })] }],
    ['vol-data-unreadable', { volData: [volData({ parsed: { specVolID: 'pvc-1', volumeHandle: 'h', driverName: 'd', nodeName: 'worker-9' } })] }],
    ['vol-data-unreadable', { volData: [volData({ size: 5000 })] }],
    [
      'block-volume-left',
      {
        tree: {
          known: true,
          value: [
            ...tree(),
            { type: 'dir', dev: DEV, size: 0, rel: 'volumeDevices' },
            { type: 'symlink', dev: DEV, size: 9, rel: 'volumeDevices/kubernetes.io~csi/pvc-2' },
          ],
        },
      },
    ],
    ['pod-tree-unreadable', { tree: { known: false, why: 'find: the listing does not end with a NUL' } }],
  ])('%s', (reason, over) => {
    refusedWith(one(over), reason);
  });

  it('names what mounted-in-namespace saw: the mount point and the holder pid', () => {
    const p = one({
      mounts: [
        {
          namespace: 'mnt:[4026532301]',
          host: false,
          pids: [{ pid: 4242, comm: 'sleep', podUid: null }],
          mountPoint: `${PODS}/${UID}/volumes/kubernetes.io~csi/pvc-1/mount`,
          root: '/',
          majorMinor: '253:3',
          how: 'at-or-under',
        },
      ],
    });
    expect(reasons(p).join()).toMatch(/mounted-in-namespace: .*pvc-1\/mount is a mount point in mount namespace mnt:\[4026532301\]: pid 4242 \(sleep\)/);
  });

  it.each([
    ['kubelet-not-running', { kubeletActive: { known: true as const, value: false } }],
    ['kubelet-not-running', { kubeletActive: { known: false as const, why: 'systemctl is not on the node' } }],
    ['kubelet-root-unknown', { podsDev: { known: false as const, why: `${PODS} does not exist` } }],
  ])('refuses the whole job: %s', (reason, over) => {
    refusedWith(plan(facts(over)), reason);
  });

  it('refuses a job that ran on another node', () => {
    expect(plan(facts({ ranOn: 'worker-2' })).kind).toBe('refuse');
  });

  it('one held UID does not stop the others in a scan job; it is listed as left alone', () => {
    const held = uidFacts({ uid: UID2, holders: [{ pid: 99, comm: 'bash', link: 'cwd', target: `${PODS}/${UID2}` }] });
    const p = plan(facts({ candidates: [held, uidFacts()] }));
    expect(p.kind).toBe('steps');
    expect(steps(p).every((s) => s.uid === UID)).toBe(true);
    expect(p.kind === 'steps' && p.summary).toContain(`left alone: pods/${UID2}: held-by-process`);
  });

  it('refuses when no UID is cleanable and at least one is held', () => {
    const p = plan(facts({ candidates: [uidFacts({ loops: ['/dev/loop3'] }), uidFacts({ uid: UID2, loops: ['/dev/loop4'] })] }));
    expect(reasons(p)).toHaveLength(2);
  });

  it('has nothing to do for a job whose UID is gone already', () => {
    expect(plan(facts({ requestedUid: UID, candidates: [] })).kind).toBe('nothing-to-do');
  });

  it('never plans anything but unlink of a file and rmdir of a directory, each naming one path under pods/<uid>', () => {
    for (const s of steps(plan(facts()))) {
      expect(s.path.startsWith(`${PODS}/${UID}`)).toBe(true);
      expect(['unlink-vol-data', 'unlink-kubelet-file', 'rmdir']).toContain(s.kind);
    }
    expect(NODE).toBe('worker-1');
  });
});
