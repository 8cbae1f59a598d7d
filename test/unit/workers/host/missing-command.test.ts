import { describe, expect, it } from 'vitest';
import type { CommandRecord } from '../../../../src/core/catalogue/result.ts';
import { isMissingCommand } from '../../../../workers/host/missing-command.ts';

const rec = (over: Partial<CommandRecord>): CommandRecord => ({
  argv: ['rbd', 'showmapped'],
  exitCode: 0,
  signal: null,
  timedOut: false,
  durationMs: 1,
  stdout: '',
  stderr: '',
  ...over,
});

describe('isMissingCommand', () => {
  it("knows a missing program by spawn's ENOENT, a shell's 127 and nsenter's message", () => {
    expect(isMissingCommand(rec({ exitCode: null, stderr: 'spawn rbd ENOENT' }))).toBe(true);
    expect(isMissingCommand(rec({ exitCode: 127, stderr: '' }))).toBe(true);
    expect(isMissingCommand(rec({ exitCode: 1, stderr: 'nsenter: failed to execute rbd: No such file or directory\n' }))).toBe(true);
  });

  it('does not take a failure of the program itself, or a timeout, for a missing program', () => {
    expect(isMissingCommand(rec({ exitCode: 22, stderr: "rbd: '/dev/rbd0' is not a block device\n" }))).toBe(false);
    expect(isMissingCommand(rec({ exitCode: 2, stderr: 'rbd: error opening image nope: (2) No such file or directory\n' }))).toBe(false);
    expect(isMissingCommand(rec({ exitCode: null, timedOut: true, stderr: 'ENOENT' }))).toBe(false);
  });
});
