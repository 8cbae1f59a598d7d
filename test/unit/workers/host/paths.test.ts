import { describe, expect, it } from 'vitest';
import { assertDiskLinkPath, assertHostPath, devPath, sysBlockPath, underRoot } from '../../../../workers/host/paths.ts';

describe('device names from input', () => {
  it.each(['sda', 'sdab', 'dm-3', 'rbd0', 'loop101'])('accepts the kernel name %s', (name) => {
    expect(devPath(name)).toBe(`/dev/${name}`);
  });

  it.each(['sda1', 'sd', 'dm-', 'dm-x', 'loop', 'loop101/../sda', '../sda', 'sda ', 'sda;reboot', 'SDA', '', 'nvme0n1', 'loop12345678'])(
    'refuses %j before building a path from it',
    (name) => {
      expect(() => devPath(name)).toThrow(/not a valid/);
    },
  );

  it('holds a name to the kind of device the caller expects', () => {
    expect(devPath('loop7', 'loop')).toBe('/dev/loop7');
    expect(() => devPath('sda', 'loop')).toThrow(/not a valid loop device name/);
  });

  it('builds /sys/block paths only from valid names', () => {
    expect(sysBlockPath('sdb', 'device', 'wwid')).toBe('/sys/block/sdb/device/wwid');
    expect(() => sysBlockPath('..', 'device')).toThrow();
  });
});

describe('by-id links from input', () => {
  it('accepts a wwn link', () => {
    expect(assertDiskLinkPath('/dev/disk/by-id/wwn-0x5000c500a1b2c3d4')).toBe('/dev/disk/by-id/wwn-0x5000c500a1b2c3d4');
  });

  it.each(['/dev/disk/by-id/../../../etc/passwd', '/dev/sda', '/dev/disk/by-id/', 'dev/disk/by-id/wwn-0x1', '/dev/disk/by-id/a/b'])('refuses %j', (p) => {
    expect(() => assertDiskLinkPath(p)).toThrow(/not a \/dev\/disk/);
  });
});

describe('host paths', () => {
  it('puts a host path under the root', () => {
    expect(underRoot('/host', '/dev/disk/by-id/x')).toBe('/host/dev/disk/by-id/x');
    expect(underRoot('/', '/sys/block')).toBe('/sys/block');
  });

  it.each(['relative/path', '/dev/../etc/shadow', '/dev/./sda', '/dev//sda', '/dev/sda\0'])('refuses the non-normal path %j instead of cleaning it', (p) => {
    expect(() => assertHostPath(p)).toThrow(/not a normal absolute host path/);
  });
});
