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

describe('what a dry-run host may really run for readonly-filesystem-recovery', () => {
  it.each([
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--boot']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--since=2026-12-07 10:00:00']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--since=2026-12-07']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--boot', '--reverse', '--output-fields=MESSAGE']],
    [['dumpe2fs', '-h', '/dev/dm-3']],
    [['dmesg', '--kernel', '--time-format', 'iso']],
    [['dumpe2fs', '-h', '/host/dev/sdb']],
    [['dd', 'if=/host/dev/nvme0n1p2', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']],
  ])('runs the look-only command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(true);
  });

  it.each([
    [['journalctl', '--rotate']],
    [['journalctl', '--vacuum-time=1s']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--boot', '--vacuum-size=1']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--since=yesterday; rm']],
    [['journalctl', '-k', '-o', 'json', '--no-pager']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--boot', '--reverse', '--reverse']],
    [['journalctl', '-k', '-o', 'json', '--no-pager', '--boot', '--output-fields=MESSAGE,_CMDLINE', '--flush']],
    [['dumpe2fs', '/dev/dm-3']],
    [['dmesg', '-c']],
    [['dmesg', '--clear']],
    [['dmesg', '--kernel', '--time-format', 'iso', '-C']],
    [['dumpe2fs', '-h', '/etc/passwd']],
    [['dumpe2fs', '-h', '/dev/dm-3', '/dev/dm-4']],
    [['e2fsck', '-p', '/dev/dm-3']],
    [['mount', '-o', 'remount,rw', '/var/lib/kubelet/plugins/kubernetes.io/csi/d/x/globalmount']],
    [['dd', 'if=/dev/zero', 'of=/dev/sdc', 'count=1', 'bs=1M', 'oflag=direct']],
    [['dd', 'if=/dev/sdc', 'of=/tmp/x', 'count=1', 'bs=1M', 'iflag=direct']],
    [['dd', 'if=/dev/sdc', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']],
    [['dd', 'if=/dev/sdc', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct', 'of=/dev/sdd']],
  ])('only records the changing or unknown command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(false);
  });
});
