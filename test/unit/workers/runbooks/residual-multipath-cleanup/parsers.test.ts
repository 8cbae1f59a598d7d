import { describe, expect, it } from 'vitest';
import { parseDmsetupInfoColumns } from '../../../../../workers/runbooks/residual-multipath-cleanup/dmsetup-info.ts';
import { parseMountinfo } from '../../../../../workers/host/mountinfo.ts';
import { mountUses } from '../../../../../workers/runbooks/residual-multipath-cleanup/mount-uses.ts';
import { isDeadPath, parseMultipathLl, pathsOf } from '../../../../../workers/runbooks/residual-multipath-cleanup/multipath-ll.ts';
import { parseMultipathdMapsJson } from '../../../../../workers/runbooks/residual-multipath-cleanup/multipathd-maps-json.ts';
import { parseSwaps } from '../../../../../workers/host/proc-facts.ts';
import { sameWwid, wwidConflicts, wwidOfDmUuid, wwidOfSysfs } from '../../../../../workers/runbooks/residual-multipath-cleanup/wwid.ts';
import { captured } from './real-fixtures.ts';

const states = (stdout: string, map = 0): string[] =>
  pathsOf(parseMultipathLl(stdout).maps[map]!).map((p) => `${p.dev} ${p.dmState} ${p.checkerState} ${p.onlineState}`);

describe('multipath -ll on real output', () => {
  it('reads a healthy scsi_debug map with three path groups (user_friendly_names, hwhandler alua)', () => {
    const { maps, stray } = parseMultipathLl(captured('healthy', 'multipath-ll.txt'));
    expect(stray).toEqual([]);
    expect(maps).toHaveLength(1);
    expect(maps[0]).toMatchObject({
      name: 'mpatha',
      wwid: '1Linux_scsi_debug_2000',
      dm: 'dm-0',
      vendorProduct: 'Linux,scsi_debug',
      size: '64M',
      features: '0',
      queueIfNoPath: false,
      hwhandler: '1 alua',
      writeProtect: 'rw',
      problems: [],
    });
    expect(maps[0]!.groups.map((g) => [g.policy, g.prio, g.status])).toEqual([
      ['service-time 0', 50, 'active'],
      ['service-time 0', 1, 'enabled'],
      ['service-time 0', 10, 'enabled'],
    ]);
    expect(pathsOf(maps[0]!).map((p) => [p.hctl, p.dev, p.devT])).toEqual([
      ['3:0:0:0', 'sdb', '8:16'],
      ['2:0:0:0', 'sda', '8:0'],
      ['4:0:0:0', 'sdc', '8:32'],
    ]);
    expect(pathsOf(maps[0]!).some(isDeadPath)).toBe(false);
  });

  it('reads every path as failed faulty offline when scsi_debug paths are offline', () => {
    expect(states(captured('all-paths-failed', 'multipath-ll.txt'))).toEqual([
      'sdb failed faulty offline',
      'sda failed faulty offline',
      'sdc failed faulty offline',
    ]);
  });

  it('reads one failed path among live ones (the map that must not be touched)', () => {
    const paths = pathsOf(parseMultipathLl(captured('one-path-failed', 'multipath-ll.txt')).maps[0]!);
    expect(paths.filter(isDeadPath).map((p) => p.dev)).toEqual(['sda']);
    expect(paths.filter((p) => !isDeadPath(p)).map((p) => p.dev)).toEqual(['sdb', 'sdc']);
  });

  it('reads an iSCSI LUN removed under a queue_if_no_path map next to a healthy one', () => {
    const { maps } = parseMultipathLl(captured('iscsi-lun-removed', 'multipath-ll.txt'));
    expect(maps.map((m) => [m.name, m.wwid, m.dm, m.queueIfNoPath])).toEqual([
      ['mpathb', '3600140503b080d39e3f42d4a24115262', 'dm-0', true],
      ['mpathc', '360014053b393903d0d44fca9b746fc94', 'dm-1', true],
    ]);
    expect(states(captured('iscsi-lun-removed', 'multipath-ll.txt'), 0)).toEqual(['sdd failed faulty running', 'sdc failed faulty running']);
    expect(states(captured('iscsi-lun-removed', 'multipath-ll.txt'), 1)).toEqual(['sda active ready running', 'sdb active ready running']);
  });
});

describe('multipath -ll layouts not captured in the lab (documented formats)', () => {
  it('reads a map without user_friendly_names: its name is its WWID', () => {
    const out = [
      '3600140503b080d39e3f42d4a24115262 dm-3 LIO-ORG,FILEIO',
      "size=64M features='1 queue_if_no_path' hwhandler='0' wp=rw",
      "`-+- policy='service-time 0' prio=0 status=enabled",
      '  `- 2:0:0:1 sdc 8:32 failed faulty running',
    ].join('\n');
    expect(parseMultipathLl(out).maps[0]).toMatchObject({
      name: '3600140503b080d39e3f42d4a24115262',
      wwid: '3600140503b080d39e3f42d4a24115262',
      dm: 'dm-3',
      hwhandler: '0',
      queueIfNoPath: true,
      problems: [],
    });
  });

  it('reads two-word checker states and a path whose disk is gone', () => {
    const out = [
      'mpathd (36001405aaaabbbbccccddddeeeeffff0) dm-4 LIO-ORG,FILEIO',
      "size=1.0G features='0' hwhandler='1 alua' wp=rw",
      "`-+- policy='round-robin 0' prio=0 status=enabled",
      '  |- 5:0:0:2 sde 8:64 failed i/o pending running',
      '  |- #:#:#:# -   #:#  failed faulty running',
      '  `- 6:0:0:2 sdf 8:80 undef undef undef',
    ].join('\n');
    const paths = pathsOf(parseMultipathLl(out).maps[0]!);
    expect(paths).toEqual([
      { hctl: '5:0:0:2', dev: 'sde', devT: '8:64', dmState: 'failed', checkerState: 'i/o pending', onlineState: 'running' },
      { hctl: null, dev: null, devT: null, dmState: 'failed', checkerState: 'faulty', onlineState: 'running' },
      { hctl: '6:0:0:2', dev: 'sdf', devT: '8:80', dmState: 'undef', checkerState: 'undef', onlineState: 'undef' },
    ]);
    // i/o pending and undef are not proof of death: only `failed faulty` is.
    expect(paths.map(isDeadPath)).toEqual([false, true, false]);
  });

  it('reads the old bracket layout (multipath-tools 0.4.x)', () => {
    const out = [
      'mpath0 (360a98000686f6959684a453333524174) dm-2 NETAPP,LUN',
      '[size=20G][features=1 queue_if_no_path][hwhandler=0][rw]',
      '\\_ round-robin 0 [prio=0][enabled]',
      ' \\_ 2:0:0:0 sdb 8:16  [failed][faulty]',
      ' \\_ 3:0:0:0 sdc 8:32  [failed][faulty]',
    ].join('\n');
    const map = parseMultipathLl(out).maps[0]!;
    expect(map).toMatchObject({
      name: 'mpath0',
      dm: 'dm-2',
      size: '20G',
      features: '1 queue_if_no_path',
      queueIfNoPath: true,
      writeProtect: 'rw',
      problems: [],
    });
    expect(map.groups[0]).toMatchObject({ policy: 'round-robin 0', prio: 0, status: 'enabled' });
    expect(pathsOf(map).map((p) => [p.dev, p.dmState, p.checkerState, p.onlineState])).toEqual([
      ['sdb', 'failed', 'faulty', null],
      ['sdc', 'failed', 'faulty', null],
    ]);
  });

  it('skips multipath log lines and keeps unknown lines as problems of their map', () => {
    const out = [
      '94.538166 | sdd: prio = const (setting: emergency fallback - alua failed)',
      captured('all-paths-failed', 'multipath-ll.txt').trimEnd(),
      '  `- something we never saw',
    ].join('\n');
    const { maps, stray } = parseMultipathLl(out);
    expect(stray).toEqual([]);
    expect(maps[0]!.problems).toEqual(['  `- something we never saw']);
  });

  it('flags a map block without its size/features line', () => {
    expect(parseMultipathLl('mpatha (1Linux_scsi_debug_2000) dm-0 Linux,scsi_debug\n').maps[0]!.problems).toEqual(['no size/features line']);
  });

  it('reads empty output as no maps', () => {
    expect(parseMultipathLl('')).toEqual({ maps: [], stray: [] });
  });
});

describe('multipathd show maps json', () => {
  it('reads the real reply: names, WWIDs, dm devices and path states', () => {
    const maps = parseMultipathdMapsJson(captured('iscsi-lun-removed', 'multipathd-show-maps-json.json'))!;
    expect(maps.map((m) => [m.name, m.wwid, m.dm, m.features])).toEqual([
      ['mpathb', '3600140503b080d39e3f42d4a24115262', 'dm-0', '1 queue_if_no_path'],
      ['mpathc', '360014053b393903d0d44fca9b746fc94', 'dm-1', '1 queue_if_no_path'],
    ]);
    expect(maps[0]!.paths).toEqual([
      { dev: 'sdd', dmState: 'failed', checkerState: 'faulty', onlineState: 'running' },
      { dev: 'sdc', dmState: 'failed', checkerState: 'faulty', onlineState: 'running' },
    ]);
  });

  it.each([
    ['not json', 'multipathd: timeout'],
    ['another major version', '{"major_version": 1, "maps": []}'],
    ['no maps array', '{"major_version": 0}'],
  ])('answers null for %s', (_, text) => {
    expect(parseMultipathdMapsJson(text)).toBeNull();
  });
});

describe('dmsetup info -c', () => {
  it('reads open counts from the real column report', () => {
    expect(parseDmsetupInfoColumns(captured('iscsi-lun-removed', 'dmsetup-info-c.txt'))).toEqual([
      { name: 'mpathb', major: 253, minor: 0, open: 1, uuid: 'mpath-3600140503b080d39e3f42d4a24115262' },
      { name: 'mpathc', major: 253, minor: 1, open: 1, uuid: 'mpath-360014053b393903d0d44fca9b746fc94' },
    ]);
    expect(parseDmsetupInfoColumns(captured('all-paths-failed', 'dmsetup-info-c.txt'))[0]).toMatchObject({ name: 'mpatha', open: 0 });
  });

  it('reads "No devices found" as none, and a device without uuid', () => {
    expect(parseDmsetupInfoColumns('No devices found\n')).toEqual([]);
    expect(parseDmsetupInfoColumns('Name Maj Min Stat Open Targ Event UUID\nvg-lv 253 2 L--w 3 1 0\n')).toEqual([
      { name: 'vg-lv', major: 253, minor: 2, open: 3, uuid: null },
    ]);
  });

  it('throws on a row it cannot read instead of guessing an open count', () => {
    expect(() => parseDmsetupInfoColumns('Name Maj Min Stat Open Targ Event UUID\nmpatha 253 0 L--w ? 1 0 x\n')).toThrow(/cannot read row/);
  });
});

describe('mountinfo', () => {
  it('reads the real guest mount table, with a healthy map mounted', () => {
    const mounts = parseMountinfo(captured('iscsi-lun-removed', 'proc-self-mountinfo.txt'));
    expect(mounts.length).toBeGreaterThan(3);
    expect(mounts.find((m) => m.mountPoint === '/mnt/healthy')).toMatchObject({ majorMinor: '253:1', fsType: 'ext4' });
  });

  it('sees a block device bind-mounted by kubelet (devtmpfs root /dm-3) and octal-escaped paths', () => {
    const [m] = parseMountinfo(
      '812 29 0:5 /dm-3 /var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pvc\\0401/dev/abc rw,nosuid shared:2 - devtmpfs udev rw,size=4007216k\n',
    );
    expect(m).toMatchObject({
      majorMinor: '0:5',
      root: '/dm-3',
      mountPoint: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pvc 1/dev/abc',
    });
    expect(mountUses(m!, { majorMinor: '253:3', names: ['dm-3', 'mapper/mpathd'] })).toBe(true);
    expect(mountUses(m!, { majorMinor: '253:4', names: ['dm-4'] })).toBe(false);
  });

  it('does not take a mount of another device for ours (near miss: same minor, other major)', () => {
    const [m] = parseMountinfo('40 29 8:0 / /data rw - ext4 /dev/sda rw\n');
    expect(mountUses(m!, { majorMinor: '253:0', names: ['dm-0'] })).toBe(false);
    expect(mountUses(m!, { majorMinor: '', names: [] })).toBe(false);
  });
});

describe('WWIDs and /proc/swaps', () => {
  it('maps sysfs and dm forms to multipath WWIDs, case-insensitively', () => {
    expect(wwidOfSysfs('naa.600140503b080d39e3f42d4a24115262\n')).toBe('3600140503b080d39e3f42d4a24115262');
    expect(wwidOfSysfs('t10.Linux   scsi_debug      2000')).toBeNull();
    expect(wwidOfDmUuid('mpath-1Linux_scsi_debug_2000')).toBe('1linux_scsi_debug_2000');
    expect(wwidOfDmUuid('LVM-abc')).toBeNull();
    expect(sameWwid('600140503b080d39e3f42d4a24115262', '3600140503B080D39E3F42D4A24115262')).toBe(true);
    expect(sameWwid('3600140503b080d39e3f42d4a24115262', '360014053b393903d0d44fca9b746fc94')).toBe(false);
  });

  it('sees a WWID conflict only between designators of the same type', () => {
    expect(wwidConflicts('333333330000007d0', '1Linux_scsi_debug_2000')).toBe(false);
    expect(wwidConflicts('3600140503b080d39e3f42d4a24115262', '360014053b393903d0d44fca9b746fc94')).toBe(true);
    expect(wwidConflicts('3600140503B080D39E3F42D4A24115262', '3600140503b080d39e3f42d4a24115262')).toBe(false);
    expect(wwidConflicts(null, '3600140503b080d39e3f42d4a24115262')).toBe(false);
  });

  it('lists swap devices', () => {
    expect(parseSwaps('Filename\tType\tSize\tUsed\tPriority\n/dev/dm-4                               partition\t1048572\t0\t-2\n')).toEqual(['/dev/dm-4']);
  });
});
