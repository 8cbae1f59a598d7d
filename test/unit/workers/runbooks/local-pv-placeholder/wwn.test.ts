import { describe, expect, it } from 'vitest';
import { wwnOfDmUuid, wwnOfLinkName, wwnOfWwid } from '../../../../../workers/runbooks/local-pv-placeholder/wwn.ts';

describe('reading a WWN', () => {
  it('reads the same WWN from a by-id link, a partition link, sysfs and a multipath map', () => {
    expect(wwnOfLinkName('wwn-0x5000C500A1B2C3D4')).toBe('5000c500a1b2c3d4');
    expect(wwnOfLinkName('wwn-0x5000c500a1b2c3d4-part1')).toBe('5000c500a1b2c3d4');
    expect(wwnOfLinkName('scsi-35000c500a1b2c3d4')).toBe('5000c500a1b2c3d4');
    expect(wwnOfWwid('naa.5000c500a1b2c3d4\n')).toBe('5000c500a1b2c3d4');
    expect(wwnOfDmUuid('mpath-35000c500a1b2c3d4\n')).toBe('5000c500a1b2c3d4');
  });

  it.each(['ata-ST4000DM004_Z1Z0ABCD', 'scsi-SATA_ST4000_Z1Z0', 'wwn-0x12', 'wwn-5000c500a1b2c3d4', 'usb-Generic_Flash-0:0'])(
    'reads no WWN from %s',
    (name) => {
      expect(wwnOfLinkName(name)).toBeNull();
    },
  );

  it('reads no WWN from a t10 identifier or a non-multipath dm uuid', () => {
    expect(wwnOfWwid('t10.ATA     QEMU HARDDISK   QM00001')).toBeNull();
    expect(wwnOfDmUuid('LVM-abcdef')).toBeNull();
  });
});
