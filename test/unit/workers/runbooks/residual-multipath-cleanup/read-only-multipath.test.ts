import { describe, expect, it } from 'vitest';
import { isReadOnlyCommand } from '../../../../../workers/host/read-only-commands.ts';

describe('which multipath commands a dry-run host really runs', () => {
  it.each([
    [['multipath', '-ll']],
    [['multipath', '-ll', 'mpathb']],
    [['multipath', '-v0', '-l']],
    [['multipathd', 'show', 'maps', 'json']],
    [['dmsetup', 'info', '-c']],
    [['dmsetup', 'info', '-c', 'mpathb']],
    [['dmsetup', 'table', 'mpathb']],
    [['dmsetup', 'info', '-c', '--noheadings', '-o', 'open', 'mpathb']],
    [['dd', 'if=/dev/dm-0', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']],
    [['dd', 'if=/host/dev/dm-12', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']],
  ])('runs the look-only command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(true);
  });

  it.each([
    [['multipath', '-f', 'mpathb']],
    [['multipath', '-F']],
    [['multipath', '-ll', '-f', 'mpathb']],
    [['multipath', '-ll', 'a', 'b']],
    [['multipathd', 'del', 'map', 'mpathb']],
    [['multipathd', 'show']],
    [['dmsetup', 'message', 'mpathb', '0', 'fail_if_no_path']],
    [['dmsetup', 'remove', 'mpathb']],
    [['dmsetup', 'info', '-c', 'a', 'b']],
    [['dd', 'if=/dev/dm-0', 'of=/dev/sda', 'count=1', 'bs=1M', 'iflag=direct']],
    [['dd', 'if=/dev/sda', 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct']],
    [['dd', 'if=/dev/dm-0', 'of=/dev/null', 'count=1000000', 'bs=1M', 'iflag=direct']],
  ])('only records the changing (or unexpected) command %j', (argv) => {
    expect(isReadOnlyCommand(argv)).toBe(false);
  });
});
