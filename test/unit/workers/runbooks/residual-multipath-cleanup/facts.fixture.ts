import type { MapFacts, Opener, PathFacts, ResidualFacts } from '../../../../../workers/runbooks/residual-multipath-cleanup/facts.ts';

// Fact fixtures for plan(): shaped like the lab's iscsi-lun-removed capture (mpathb dead with
// queue_if_no_path, mpathc healthy and mounted). Each builder takes overrides for near misses.
// The stuck opener is the capture's own (ps-d-state.txt: pid 857 `(udev-worker)` in D state).

export const DEAD_WWID = '3600140503b080d39e3f42d4a24115262';
const LIVE_WWID = '360014053b393903d0d44fca9b746fc94';
const OBSERVED_AT = '2025-12-02T15:30:00.000Z';
export const BOOT_ID = '5c3b7a1e-7d1f-4f0a-9a51-0d2f4a7c9e11';

/** A process with the map open: a system process unless a cgroup says otherwise. */
export const opener = (pid: number, comm: string, over: Partial<Opener> = {}): Opener => ({
  pid,
  comm,
  state: 'D',
  fds: 1,
  startTime: String(1000 + pid),
  cgroup: '0::/system.slice/systemd-udevd.service',
  podUid: null,
  ownProbe: false,
  ...over,
});

const path = (hctl: string, dev: string, devT: string, dead: boolean, over: Partial<PathFacts> = {}): PathFacts => ({
  hctl,
  dev,
  devT,
  dmState: dead ? 'failed' : 'active',
  checkerState: dead ? 'faulty' : 'ready',
  onlineState: 'running',
  sysfsState: 'running',
  sysfsWwid: null,
  ...over,
});

export function deadMap(over: Partial<MapFacts> = {}): MapFacts {
  return {
    name: 'mpathb',
    wwid: DEAD_WWID,
    dm: 'dm-0',
    majorMinor: '253:0',
    dmUuid: `mpath-${DEAD_WWID}`,
    vendorProduct: 'LIO-ORG,FILEIO',
    features: '1 queue_if_no_path',
    queueIfNoPath: true,
    paths: [path('3:0:0:1', 'sdd', '8:48', true), path('2:0:0:1', 'sdc', '8:32', true)],
    problems: [],
    slaves: ['sdc', 'sdd'],
    holders: [],
    openCount: 2,
    mounts: [],
    swap: false,
    openers: [opener(857, '(udev-worker)'), opener(990, 'dd', { ownProbe: true, cgroup: '0::/kubepods.slice/volume-medic-agent' })],
    diskOpeners: [],
    probe: { outcome: 'timed-out', durationMs: 10_050, exitCode: null, stuckPids: [990], detail: 'no answer within 10050 ms, abandoned' },
    byIdLinks: ['/dev/disk/by-id/dm-name-mpathb', `/dev/disk/by-id/dm-uuid-mpath-${DEAD_WWID}`],
    loopBacked: [],
    exportedBy: [],
    // Dead for 5 minutes over 3 of the agent's observations: past the 120 s grace.
    deadSince: { since: '2025-12-02T15:25:00.000Z', samples: 3, acrossBoot: false },
    ...over,
  };
}

export function healthyMap(over: Partial<MapFacts> = {}): MapFacts {
  return {
    name: 'mpathc',
    wwid: LIVE_WWID,
    dm: 'dm-1',
    majorMinor: '253:1',
    dmUuid: `mpath-${LIVE_WWID}`,
    vendorProduct: 'LIO-ORG,FILEIO',
    features: '1 queue_if_no_path',
    queueIfNoPath: true,
    paths: [path('2:0:0:0', 'sda', '8:0', false), path('3:0:0:0', 'sdb', '8:16', false)],
    problems: [],
    slaves: ['sda', 'sdb'],
    holders: [],
    openCount: 1,
    mounts: [{ mountPoint: '/mnt/healthy', how: 'ext4 /dev/mapper/mpathc (mnt:[4026531841])', pids: [1] }],
    swap: false,
    openers: [],
    diskOpeners: [opener(700, 'multipathd', { state: 'S', cgroup: '0::/system.slice/multipathd.service' })],
    probe: { outcome: 'not-run', durationMs: 0, exitCode: null, stuckPids: [], detail: 'not probed: the map has a path that is not dead' },
    byIdLinks: [],
    loopBacked: [],
    exportedBy: [],
    deadSince: null,
    ...over,
  };
}

/** The same dead map with one path alive again. */
export const withOneLivePath = (m: MapFacts): MapFacts => ({
  ...m,
  paths: m.paths.map((p, i) => (i === 0 ? { ...p, dmState: 'active', checkerState: 'ready' } : p)),
});

export function facts(maps: MapFacts[] = [deadMap(), healthyMap()], over: Partial<ResidualFacts> = {}): ResidualFacts {
  return {
    node: 'worker-1',
    ranOn: 'worker-1',
    mode: 'enforce',
    observedAt: OBSERVED_AT,
    listing: { ok: true },
    maps,
    attachments: { known: true, wwids: [] },
    mountNamespaces: 3,
    unreadableMountinfo: [],
    multipathdAgrees: true,
    bootId: BOOT_ID,
    intents: [],
    unreadableIntents: [],
    observeNotes: [],
    ...over,
  };
}
