import { describe, expect, it } from 'vitest';
import type { Plan } from '../../../../workers/engine/runbook.ts';
import { pickLoop, plan } from '../../../../workers/runbooks/local-pv-placeholder/plan.ts';
import type { PlaceholderStep } from '../../../../workers/runbooks/local-pv-placeholder/step.ts';
import { IMAGE, PATH, WWN, lostDisk, placed, recordFor } from './facts.fixture.ts';

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
    expect(step(p, 'write-record').record).toMatchObject({ pv: 'local-pv-1', wwn: WWN, loop: 'loop101', disksAtPlacement: ['5000c500aaaaaaaa'] });
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
    const attached = [{ loop: 'loop101', backFile: '/x' }, { loop: 'loop103', backFile: '/y' }];
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
    const p = plan(placed({ sightings: [{ device: '/dev/sdd', via: '/sys/block/sdd' }], disksPresent: ['5000c500aaaaaaaa', WWN] }));
    expect(kinds(p)).toEqual(['remove-link', 'detach-loop', 'delete-image', 'delete-record']);
    expect(p.kind === 'steps' && p.summary).toMatch(/is back.*\/dev\/sdd/);
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
  const release = { action: 'release' as const };

  it('removes our link, detaches our loop device, deletes the image and the record', () => {
    const p = plan(placed(release));
    expect(kinds(p)).toEqual(['remove-link', 'detach-loop', 'delete-image', 'delete-record']);
    expect(step(p, 'detach-loop')).toMatchObject({ loop: 'loop101', destructive: true });
  });

  it('never detaches a loop device backed by a file it did not create', () => {
    const p = plan(placed({ ...release, attached: [{ loop: 'loop101', backFile: '/srv/other.img' }] }));
    expect(kinds(p)).not.toContain('detach-loop');
    expect(p.kind === 'steps' && p.summary).toMatch(/not detaching it/);
  });

  it('leaves the link alone when it no longer points at our loop device', () => {
    const p = plan(placed({ ...release, pathState: { kind: 'link', target: '../../sdd', resolvesTo: '/dev/sdd', resolvedType: 'block' } }));
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
