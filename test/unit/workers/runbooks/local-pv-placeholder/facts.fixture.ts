import type { PlaceholderFacts } from '../../../../../workers/runbooks/local-pv-placeholder/facts.ts';
import type { PlaceholderRecord } from '../../../../../workers/runbooks/local-pv-placeholder/record.ts';

// Fact fixtures for plan(): a node that lost disk wwn-0x5000c500a1b2c3d4, opted in, nothing else
// going on. Each test changes one thing.

export const WWN = '5000c500a1b2c3d4';
export const PATH = `/dev/disk/by-id/wwn-0x${WWN}`;
export const IMAGE = '/var/lib/volume-medic/placeholders/local-pv-1.img';

export function lostDisk(overrides: Partial<PlaceholderFacts> = {}): PlaceholderFacts {
  return {
    action: 'place',
    release: { by: 'detector', force: false, asked: 'npd: LocalDiskLost cleared on worker-1' },
    jobId: 'lpv_local-pv-1_0123456789ab',
    observedAt: '2025-01-01T00:00:00.000Z',
    node: 'worker-1',
    ranOn: 'worker-1',
    pv: 'local-pv-1',
    path: PATH,
    optIn: { label: 'volume-medic.io/local-pv-placeholder=enabled', value: 'enabled', optedIn: true },
    wwn: WWN,
    pathState: { kind: 'missing' },
    sightings: [],
    disksPresent: ['5000c500aaaaaaaa'],
    record: null,
    recordUnreadable: false,
    reservedLoops: [],
    attached: [{ loop: 'loop0', backFile: '/var/lib/snapd/snaps/core.snap' }],
    holders: {},
    image: { path: IMAGE, seenByCommandsAs: IMAGE, size: null },
    ...overrides,
  };
}

export function recordFor(loop = 'loop101'): PlaceholderRecord {
  return {
    version: 1,
    pv: 'local-pv-1',
    path: PATH,
    wwn: WWN,
    loop,
    image: IMAGE,
    createdAt: '2025-01-01T00:00:00.000Z',
    jobId: 'lpv_local-pv-1_0123456789ab',
    disksAtPlacement: ['5000c500aaaaaaaa'],
  };
}

/** A placeholder fully in place on loop101. */
export function placed(overrides: Partial<PlaceholderFacts> = {}): PlaceholderFacts {
  return lostDisk({
    record: recordFor('loop101'),
    pathState: { kind: 'link', target: '/dev/loop101', resolvesTo: '/dev/loop101', resolvedType: 'block' },
    attached: [{ loop: 'loop101', backFile: IMAGE }],
    image: { path: IMAGE, seenByCommandsAs: IMAGE, size: 512 },
    ...overrides,
  });
}

/** The kernel's number of sdd (sysfs `dev`), and of the node /dev/sdd udev made for it. */
export const SDD = '8:48';

/** The real disk back: sdd has the WWN in sysfs, and udev's by-id links lead to its node. */
export const DISK_BACK: Pick<PlaceholderFacts, 'sightings'> = {
  sightings: [
    { device: '/dev/sdd', via: '/sys/block/sdd', dev: SDD },
    { device: '/dev/sdd', via: `/dev/disk/by-id/scsi-3${WWN}`, dev: SDD },
  ],
};
