import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseMountinfo } from '../../../../workers/host/mountinfo.ts';

const fixture = (name: string): string => readFileSync(new URL(`../../../fixtures/host/ext4-error-remount-ro/${name}`, import.meta.url), 'utf8');

describe('parseMountinfo', () => {
  it("reads proc(5)'s example line, both option lists included", () => {
    expect(parseMountinfo('36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n')).toEqual([
      {
        id: 36,
        parent: 35,
        majorMinor: '98:0',
        root: '/mnt1',
        mountPoint: '/mnt2',
        fsType: 'ext3',
        source: '/dev/root',
        mountOptions: ['rw', 'noatime'],
        superOptions: ['rw', 'errors=continue'],
      },
    ]);
  });

  it('keeps apart a mount made read-only (its own options) and a file system the kernel made read-only after an error (captured on Linux 6.18)', () => {
    // A bind mount asked for read-only: the mount says ro, the file system stays rw.
    const [bind] = parseMountinfo('51 46 7:0 / /mnt/ro-bind ro,relatime - ext4 /dev/loop0 rw,errors=remount-ro\n');
    expect(bind!.mountOptions).toContain('ro');
    expect(bind!.superOptions).toContain('rw');
    // ext4 after an error with errors=remount-ro: the mount still says rw; the file system says
    // emergency_ro (older kernels: ro), and writes fail with EROFS.
    const [errored] = parseMountinfo(fixture('mountinfo.after-error.txt'));
    expect(errored).toMatchObject({ fsType: 'ext4', source: '/dev/loop0', mountOptions: ['rw', 'relatime'] });
    expect(errored!.superOptions).toEqual(['rw', 'errors=remount-ro', 'emergency_ro']);
    expect(fixture('kernel-log.txt')).toContain('EXT4-fs (loop0): Remounting filesystem read-only');
    expect(fixture('dumpe2fs-h.txt')).toMatch(/^Filesystem state: +clean with errors$/m);
  });

  it('skips a line without the separator or a device number, never guessing', () => {
    expect(parseMountinfo('36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw\nnot a line\n\n')).toEqual([]);
  });
});
