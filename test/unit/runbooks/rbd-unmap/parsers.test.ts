import { describe, expect, it } from 'vitest';
import {
  isBusy, isNotMapped, parseMountinfo, parseShowmappedJson, parseShowmappedText, podUidOfCgroup,
} from '../../../../workers/runbooks/rbd-unmap/index.ts';
import { cephFixture } from '../rbd-stale-mapping/ceph-fixture.ts';

describe('rbd showmapped', () => {
  it('reads JSON and the text table (empty namespace column) alike', () => {
    const json = parseShowmappedJson(cephFixture('rbd-showmapped-three.transcribed.json'));
    expect(json[1]).toEqual({ id: '1', pool: 'kube', namespace: '', image: 'csi-vol-0001', snap: '-', device: 'rbd1' });
    expect(parseShowmappedText(cephFixture('rbd-showmapped-three.transcribed.txt'))).toEqual(json);
  });

  it('reads the real output of a node with nothing mapped', () => {
    expect(parseShowmappedJson(cephFixture('rbd-showmapped-none.json'))).toEqual([]);
    expect(parseShowmappedText(cephFixture('rbd-showmapped-none.txt'))).toEqual([]);
  });

  it('refuses a device that is not an rbd device name', () => {
    expect(() => parseShowmappedJson('[{"id":"0","pool":"p","namespace":"","name":"i","snap":"-","device":"/dev/../sda"}]')).toThrow(/not an rbd device/);
  });
});

describe('rbd unmap errors', () => {
  it('tells busy from already-unmapped', () => {
    expect(isBusy(cephFixture('rbd-unmap-busy.transcribed.err'))).toBe(true);
    expect(isNotMapped(cephFixture('rbd-unmap-busy.transcribed.err'))).toBe(false);
    expect(isNotMapped(cephFixture('rbd-unmap-not-a-block-device.err'))).toBe(true);
    expect(isBusy(cephFixture('rbd-unmap-not-a-block-device.err'))).toBe(false);
  });
});

describe('mountinfo and cgroups', () => {
  it('finds the kubelet mounts of rbd1 with their device numbers', () => {
    const rbd1 = parseMountinfo(cephFixture('mountinfo-host-stale-csi.transcribed.txt')).filter((m) => m.source === '/dev/rbd1');
    expect(rbd1.map((m) => [m.majorMinor, m.fsType])).toEqual([['252:16', 'ext4'], ['252:16', 'ext4']]);
    expect(rbd1[1]?.mountPoint).toMatch(/^\/var\/lib\/kubelet\/pods\/6f1c3a52-.*\/mount$/);
  });

  it('decodes octal escapes in paths', () => {
    const [m] = parseMountinfo('40 22 252:16 / /mnt/with\\040space rw - ext4 /dev/rbd1 rw');
    expect(m?.mountPoint).toBe('/mnt/with space');
  });

  it('reads the pod uid from systemd and cgroupfs cgroups, and none from a host service', () => {
    expect(podUidOfCgroup(cephFixture('cgroup-pod-systemd.transcribed.txt'))).toBe('6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81');
    expect(podUidOfCgroup(cephFixture('cgroup-pod-cgroupfs.transcribed.txt'))).toBe('6f1c3a52-9d7e-4b1a-8c2f-0e4d5b6a7c81');
    expect(podUidOfCgroup('0::/system.slice/backup.service\n')).toBeNull();
  });
});
