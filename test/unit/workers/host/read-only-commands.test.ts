import { describe, expect, it } from 'vitest';
import { isReadOnlyCommand } from '../../../../workers/host/read-only-commands.ts';

describe('what a dry-run host may really run', () => {
  it.each([
    [['losetup', '--list', '--json', '--output', 'NAME,BACK-FILE']],
    [['losetup', '-l', '/dev/loop101']],
    [['losetup', '-a']],
    [['blockdev', '--getsize64', '/dev/loop101']],
    [['stat', '/dev/loop101']],
  ])('runs the look-only command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(true);
  });

  it.each([
    [['losetup', '/dev/loop101', '/var/lib/volume-medic/placeholders/pv.img']],
    [['losetup', '-d', '/dev/loop101']],
    [['losetup', '-D']],
    [['losetup', '-f', '--show', '/x.img']],
    [['losetup', '--json']],
    [['losetup', '-l', '-d', '/dev/loop101']],
    [['blockdev', '--setro', '/dev/loop101']],
    [['blockdev', '--getsize64']],
    [['mknod', '/dev/loop101', 'b', '7', '101']],
    [['sh', '-c', 'cat /etc/hostname']],
    [[]],
  ])('only records the changing command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(false);
  });
});
