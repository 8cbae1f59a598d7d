import { describe, expect, it } from 'vitest';
import type { Plan } from '../../../../../workers/engine/runbook.ts';
import { pickLoop, plan } from '../../../../../workers/runbooks/local-pv-placeholder/plan.ts';
import type { PlaceholderStep } from '../../../../../workers/runbooks/local-pv-placeholder/step.ts';
import { DISK_BACK, IMAGE, PATH, SDD, WWN, lostDisk, placed, recordFor } from './facts.fixture.ts';

const kinds = (p: Plan<PlaceholderStep>): string[] => (p.kind === 'steps' ? p.steps.map((s) => s.kind) : []);
const reasons = (p: Plan<PlaceholderStep>): string => (p.kind === 'refuse' ? p.reasons.join(' ') : `not refused: ${p.kind}`);
const step = <K extends PlaceholderStep['kind']>(p: Plan<PlaceholderStep>, kind: K): Extract<PlaceholderStep, { kind: K }> => {
  const s = p.kind === 'steps' ? p.steps.find((x) => x.kind === kind) : undefined;
  if (!s) throw new Error(`no ${kind} step`);
  return s as Extract<PlaceholderStep, { kind: K }>;
};

describe('placing a placeholder', () => {
  it('places a placeholder on loop101 when the disk is gone and the node opted in', () => {
    const p = plan(lostDisk());
    expect(kinds(p)).toEqual(['write-record', 'create-image', 'ensure-loop-node', 'attach-loop', 'point-link']);
    expect(step(p, 'point-link')).toMatchObject({ path: PATH, target: '/dev/loop101', replaces: null });
    expect(step(p, 'create-image')).toMatchObject({ image: IMAGE, bytes: 512 });
    expect(step(p, 'write-record').record).toMatchObject({
      pv: 'local-pv-1',
      wwn: WWN,
      loop: 'loop101',
      disksAtPlacement: ['5000c500aaaaaaaa'],
    });
  });

  it('refuses on a node without the opt-in label, and says which label is missing', () => {
    const p = plan(lostDisk({ optIn: { label: 'volume-medic.io/local-pv-placeholder=enabled', value: null, optedIn: false } }));
    expect(reasons(p)).toMatch(/has not opted in.*volume-medic\.io\/local-pv-placeholder=enabled.*absent/);
  });

  it('refuses on a node whose label has another value', () => {
    const p = plan(lostDisk({ optIn: { label: 'volume-medic.io/local-pv-placeholder=enabled', value: 'disabled', optedIn: false } }));
    expect(reasons(p)).toMatch(/"disabled"/);
  });

  it('refuses when the disk with that WWN is present under another name', () => {
    const p = plan(lostDisk({ sightings: [{ device: '/dev/sdc', via: '/sys/block/sdc' }] }));
    expect(reasons(p)).toMatch(/present as \/dev\/sdc.*only its link is missing/);
  });

  it('does nothing when the path is present and leads to a block device', () => {
    const p = plan(lostDisk({ pathState: { kind: 'link', target: '../../sdb', resolvesTo: '/dev/sdb', resolvedType: 'block' } }));
    expect(p).toMatchObject({ kind: 'nothing-to-do' });
  });

  it('refuses a dangling link it did not create rather than replacing it', () => {
    const p = plan(lostDisk({ pathState: { kind: 'link', target: '../../sdb', resolvesTo: '/dev/sdb', resolvedType: null } }));
    expect(reasons(p)).toMatch(/does not exist.*not ours/);
  });

  it('refuses when the path is a regular file, not a link', () => {
    expect(reasons(plan(lostDisk({ pathState: { kind: 'not-a-link', type: 'file' } })))).toMatch(/is a file, not a link/);
  });

  it('refuses a path whose name carries no WWN it can check', () => {
    const p = plan(lostDisk({ path: '/dev/disk/by-id/ata-ST4000_Z1Z0ABCD', wwn: null }));
    expect(reasons(p)).toMatch(/cannot tell the disk's WWN/);
  });

  it('refuses a job meant for another node', () => {
    expect(reasons(plan(lostDisk({ ranOn: 'worker-2' })))).toMatch(/for node worker-1 but ran on worker-2/);
  });

  it('never takes loop0 to loop100, even when they are all free', () => {
    expect(pickLoop({ attached: [], reservedLoops: [] })).toBe('loop101');
  });

  it('takes the lowest free loop above loop100, skipping attached and reserved ones', () => {
    const attached = [
      { loop: 'loop101', backFile: '/x' },
      { loop: 'loop103', backFile: '/y' },
    ];
    expect(pickLoop({ attached, reservedLoops: ['loop102'] })).toBe('loop104');
  });

  it('does not count an attached loop below 101 as a reason to go higher', () => {
    expect(pickLoop({ attached: [{ loop: 'loop100', backFile: '/x' }], reservedLoops: [] })).toBe('loop101');
  });
});

describe('a second job for the same PV', () => {
  it('does nothing when the placeholder is fully in place', () => {
    expect(plan(placed())).toMatchObject({ kind: 'nothing-to-do', summary: expect.stringMatching(/already in place/) });
  });

  it('finishes a half-done placement on the recorded loop device', () => {
    const p = plan(placed({ pathState: { kind: 'missing' } }));
    expect(kinds(p)).toContain('point-link');
    expect(step(p, 'attach-loop').loop).toBe('loop101');
  });

  it('moves to another loop device when the recorded one was taken by someone else', () => {
    const p = plan(lostDisk({ record: recordFor('loop101'), attached: [{ loop: 'loop101', backFile: '/other.img' }] }));
    expect(step(p, 'attach-loop').loop).toBe('loop102');
    expect(step(p, 'write-record').record.loop).toBe('loop102');
  });

  it('releases the placeholder when the disk with the same WWN is back', () => {
    const p = plan(placed({ ...DISK_BACK, disksPresent: ['5000c500aaaaaaaa', WWN] }));
    expect(kinds(p)).toEqual(['remove-link', 'detach-loop', 'delete-image', 'delete-record']);
    expect(p.kind === 'steps' && p.summary).toMatch(/is back.*\/dev\/sdd/);
  });

  it('keeps the placeholder while the disk is seen in sysfs but no by-id link leads to it yet', () => {
    const p = plan(placed({ sightings: [{ device: '/dev/sdd', via: '/sys/block/sdd' }], disksPresent: ['5000c500aaaaaaaa', WWN] }));
    expect(reasons(p)).toMatch(
      /not true that a \/dev\/disk\/by-id link of WWN 5000c500a1b2c3d4 leads to it .*points at \/dev\/loop101 \(a loop device: our placeholder\)/,
    );
  });

  it('reports that the PV must be recreated when a disk with a new WWN appeared instead', () => {
    const p = plan(placed({ disksPresent: ['5000c500aaaaaaaa', '5000c500bbbbbbbb'] }));
    expect(reasons(p)).toMatch(/new WWN \(5000c500bbbbbbbb\).*the PV must be recreated/);
  });

  it('does not call a disk new when it was already there at placement', () => {
    expect(plan(placed({ disksPresent: ['5000c500aaaaaaaa'] }))).toMatchObject({ kind: 'nothing-to-do' });
  });

  it('refuses when the link now points somewhere we did not put it', () => {
    const p = plan(placed({ pathState: { kind: 'link', target: '/dev/loop7', resolvesTo: '/dev/loop7', resolvedType: 'block' } }));
    expect(reasons(p)).toMatch(/points at \/dev\/loop7, which we did not create/);
  });

  it('refuses when the record of this PV cannot be read', () => {
    expect(reasons(plan(lostDisk({ recordUnreadable: true })))).toMatch(/cannot be read/);
  });
});

describe('releasing a placeholder', () => {
  /** A detector's release (NPD's condition cleared) on a node where the disk is back. */
  const release = { action: 'release' as const, ...DISK_BACK };

  it('removes our link, detaches our loop device, deletes the image and the record', () => {
    const p = plan(placed(release));
    expect(kinds(p)).toEqual(['remove-link', 'detach-loop', 'delete-image', 'delete-record']);
    expect(step(p, 'detach-loop')).toMatchObject({ loop: 'loop101', destructive: true });
  });

  it('gives every destructive step the evidence that the disk is back and that the object is ours', () => {
    const p = plan(placed(release));
    const claims = (k: string) => (p.kind === 'steps' ? (p.steps.find((s) => s.kind === k)?.evidence ?? []) : []).map((e) => `${e.status} ${e.claim}`);
    for (const k of ['remove-link', 'detach-loop', 'delete-image']) {
      expect(claims(k)).toEqual(
        expect.arrayContaining([
          'holds a block device with WWN 5000c500a1b2c3d4 is present, and it is not a loop device',
          'holds a /dev/disk/by-id link of WWN 5000c500a1b2c3d4 leads to it',
        ]),
      );
    }
    expect(claims('detach-loop')).toContain(`holds /dev/loop101 is backed by our image ${IMAGE}`);
  });

  it('keeps the placeholder when the detector says the disk is back but the node does not show it, naming what is missing', () => {
    const p = plan(placed({ action: 'release' }));
    expect(p.kind).toBe('refuse');
    expect(reasons(p)).toMatch(
      /the disk of PV local-pv-1 is not back, so its placeholder stays: not true that a block device with WWN 5000c500a1b2c3d4 is present.*no block device with WWN 5000c500a1b2c3d4.*points at \/dev\/loop101 \(a loop device: our placeholder\).*release it with force/,
    );
  });

  it('treats a release job from before the field existed as a detector’s: verified', () => {
    const { release: _r, ...facts } = placed({ action: 'release' });
    expect(plan({ ...facts, release: { by: 'detector', force: false, asked: '' } }).kind).toBe('refuse');
  });

  it('never counts a loop device with that WWN as the disk', () => {
    const p = plan(
      placed({
        action: 'release',
        sightings: [
          { device: '/dev/loop7', via: '/sys/block/loop7' },
          { device: '/dev/loop7', via: `/dev/disk/by-id/scsi-3${WWN}` },
        ],
      }),
    );
    expect(p.kind).toBe('refuse');
  });

  it('releases on the disk that udev linked back at the PV’s own path, leaving that link alone', () => {
    const p = plan(
      placed({
        action: 'release',
        sightings: [{ device: '/dev/sdd', via: '/sys/block/sdd', dev: SDD }],
        pathState: { kind: 'link', target: '../../sdd', resolvesTo: '/dev/sdd', resolvedType: 'block', resolvedDev: SDD },
      }),
    );
    expect(kinds(p)).toEqual(['detach-loop', 'delete-image', 'delete-record']);
  });

  it('keeps the placeholder when the node the link leads to is not the kernel’s device of that name (a loop device made with mknod as sdd)', () => {
    const p = plan(
      placed({
        action: 'release',
        sightings: [
          { device: '/dev/sdd', via: '/sys/block/sdd', dev: SDD },
          { device: '/dev/sdd', via: `/dev/disk/by-id/scsi-3${WWN}`, dev: '7:101' },
        ],
      }),
    );
    expect(reasons(p)).toMatch(
      new RegExp(
        `not true that a /dev/disk/by-id link of WWN ${WWN} leads to it .*scsi-3${WWN} -> /dev/sdd, but that node is 7:101 and the kernel's /dev/sdd is 8:48`,
      ),
    );
  });

  it('keeps the placeholder when sysfs does not say which device number the disk has', () => {
    const p = plan(
      placed({
        action: 'release',
        sightings: [
          { device: '/dev/sdd', via: '/sys/block/sdd', dev: null },
          { device: '/dev/sdd', via: `/dev/disk/by-id/scsi-3${WWN}`, dev: SDD },
        ],
      }),
    );
    expect(reasons(p)).toMatch(/the kernel's \/dev\/sdd is of unknown number/);
  });

  it('releases on an operator’s forced request without the disk, and says so in the evidence', () => {
    const p = plan(
      placed({
        action: 'release',
        release: { by: 'operator', force: true, asked: 'api: release of the placeholder of PV local-pv-1 forced by alice: disk replaced' },
      }),
    );
    expect(kinds(p)).toEqual(['remove-link', 'detach-loop', 'delete-image', 'delete-record']);
    const ev = p.kind === 'steps' ? p.steps.find((s) => s.kind === 'detach-loop')?.evidence : [];
    expect(ev?.[0]).toMatchObject({
      claim: 'an operator forced the release without the disk check',
      status: 'holds',
      detail: expect.stringMatching(/forced by alice: disk replaced/),
    });
    expect(p.kind === 'steps' && p.summary).toMatch(/release forced by an operator/);
  });

  it("keeps a placeholder that something still holds, even on an operator's forced request, naming the holder", () => {
    const holders = {
      loop101: ['pid 4242 (postgres, pod UID 6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81) has it open', 'loop7 is backed by it (/var/lib/kubelet/plugins/x)'],
    };
    const forced = { action: 'release' as const, release: { by: 'operator' as const, force: true, asked: 'api: forced by alice' } };
    for (const f of [placed({ ...release, holders }), placed({ ...forced, holders })]) {
      expect(f.holders).toBe(holders);
      const p = plan(f);
      expect(p.kind).toBe('refuse');
      expect(reasons(p)).toMatch(
        /placeholder of PV local-pv-1 is still in use, so it stays .*\/dev\/loop101: pid 4242 \(postgres.*\/dev\/loop101: loop7 is backed by it.*Stop the pod/,
      );
    }
    expect(plan(placed({ ...release, holders: { loop101: [] } })).kind).toBe('steps');
  });

  it('keeps a placeholder whose holders were not read: unknown is not nothing', () => {
    const p = plan(placed({ ...release, holders: null }));
    expect(p.kind).toBe('refuse');
    expect(reasons(p)).toMatch(/what holds the placeholder of PV local-pv-1 was not read, so it stays/);
  });

  it('says on the detach step that nothing held the device', () => {
    const ev = ((p) => (p.kind === 'steps' ? (p.steps.find((s) => s.kind === 'detach-loop')?.evidence ?? []) : []))(plan(placed(release)));
    expect(ev.map((e) => e.claim)).toContain('nothing holds /dev/loop101: no process has it open, nothing mounts it or is stacked on it');
  });

  it('never detaches a loop device backed by a file it did not create', () => {
    const p = plan(placed({ ...release, attached: [{ loop: 'loop101', backFile: '/srv/other.img' }] }));
    expect(kinds(p)).not.toContain('detach-loop');
    expect(p.kind === 'steps' && p.summary).toMatch(/not detaching it/);
  });

  it('leaves the link alone when it no longer points at our loop device', () => {
    const p = plan(placed({ ...release, pathState: { kind: 'link', target: '../../sdd', resolvesTo: '/dev/sdd', resolvedType: 'block' } }));
    expect(p.kind).toBe('steps');
    expect(kinds(p)).not.toContain('remove-link');
  });

  it('does nothing when no placeholder is recorded', () => {
    expect(plan(lostDisk(release))).toMatchObject({ kind: 'nothing-to-do' });
  });

  it('releases even on a node that has since dropped its opt-in label', () => {
    const p = plan(placed({ ...release, optIn: { label: 'k=v', value: null, optedIn: false } }));
    expect(kinds(p)).toContain('detach-loop');
  });
});
