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

describe("orphaned-pod-volumes' look-only shapes (docs/decisions/0008 §1.2)", () => {
  const FMT = '%y\\t%D\\t%s\\t%P\\0';
  it.each([
    [['find', '-P', '/var/lib/kubelet/pods/0b8c1e1a-0000-4000-8000-000000000001', '-xdev', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-mindepth', '1', '-maxdepth', '1', '-printf', '%y\\t%f\\0']],
    [['crictl', 'pods', '-o', 'json']],
    [['systemctl', 'is-active', 'kubelet']],
  ])('runs %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(true);
  });

  it.each([
    [['find', '-P', '/var/lib/kubelet/pods', '-delete']],
    [['find', '-P', '/var/lib/kubelet/pods', '-delete', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-exec', 'rm', '{}', ';', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-fprint', '/etc/x', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-ok', 'rm', '{}', ';', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-printf', FMT, '-delete']],
    [['find', '/var/lib/kubelet/pods', '-printf', FMT]],
    [['find', '-L', '/var/lib/kubelet/pods', '-printf', FMT]],
    [['find', '-P', 'relative', '-printf', FMT]],
    [['find', '-P', '/var/lib/kubelet/pods', '-maxdepth', '-delete', '-printf', FMT]],
    [['crictl', 'rmp', '-a']],
    [['crictl', 'pods', '-o', 'json', '--rm']],
    [['systemctl', 'restart', 'kubelet']],
    [['systemctl', 'is-active', 'kubelet', 'docker']],
    [['rmdir', '--', '/var/lib/kubelet/pods/x']],
    [['unlink', '--', '/var/lib/kubelet/pods/x/etc-hosts']],
  ])('only records %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(false);
  });
});
