import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseDumpe2fsHeader } from '../../../../../workers/runbooks/readonly-filesystem-recovery/dumpe2fs.ts';
import {
  classifyKernelMessage,
  linesAbout,
  parseDmesgIso,
  parseKernelJournal,
} from '../../../../../workers/runbooks/readonly-filesystem-recovery/kernel-fs-lines.ts';

const fixture = (path: string): string => readFileSync(new URL(`../../../../fixtures/${path}`, import.meta.url), 'utf8');

describe('the kernel lines of a stopped file system (journalctl -k -o json)', () => {
  const { lines, unreadable } = parseKernelJournal(fixture('kernel/ext4-xfs-quoted-0008.journal.json'));

  it("reads the quoted Longhorn node's journal abort on dm-17 with the journal's time and boot", () => {
    expect(linesAbout(lines, 'dm-17').map((l) => l.kind)).toEqual(['ext4-mounted', 'buffer-io-error', 'ext4-error', 'ext4-remount-ro']);
    const remount = linesAbout(lines, 'dm-17').find((l) => l.kind === 'ext4-remount-ro');
    expect(remount).toMatchObject({ bootId: '3f0c2a9d8e7b4c6a9f1e2d3c4b5a6978', at: '2023-12-04T14:40:48.968Z' });
  });

  it('names the journal by its device, without the journal inode suffix', () => {
    expect(linesAbout(lines, 'sdb7').map((l) => l.kind)).toEqual(['ext4-error', 'journal-aborted', 'ext4-remount-ro']);
  });

  it("keeps the block layer's line about the path disk apart from the map's", () => {
    expect(linesAbout(lines, 'sdb').map((l) => l.kind)).toEqual(['block-io-error']);
  });

  it('reads both forms of an XFS shutdown, and not its other lines', () => {
    expect(lines.filter((l) => l.kind === 'xfs-shutdown').map((l) => l.device)).toEqual(['sdb1', 'dm-1']);
    expect(lines.filter((l) => l.kind === 'xfs-shut-down').map((l) => l.device)).toEqual(['dm-3']);
    expect(lines.some((l) => l.message.includes('Please unmount'))).toBe(false);
  });

  it('decodes a message journald gave as bytes, and counts a line that is not JSON instead of guessing', () => {
    expect(linesAbout(lines, 'dm-4')).toMatchObject([{ kind: 'ext4-remount-ro' }]);
    expect(unreadable).toBe(1);
  });

  it('classifies the captured 6.18 lines of the host fixture', () => {
    const kinds = fixture('host/ext4-error-remount-ro/kernel-log.txt')
      .split('\n')
      .filter(Boolean)
      .map((m) => classifyKernelMessage(m));
    expect(kinds).toEqual([
      { kind: 'ext4-mounted', device: 'loop0' },
      { kind: 'ext4-error', device: 'loop0' },
      { kind: 'journal-aborted', device: 'loop0' },
      { kind: 'ext4-remount-ro', device: 'loop0' },
    ]);
  });

  it("reads 6.1's `Buffer I/O error on device` form as well as `on dev`", () => {
    expect(classifyKernelMessage('Buffer I/O error on device dm-0, logical block 8513')).toEqual({ kind: 'buffer-io-error', device: 'dm-0' });
    expect(classifyKernelMessage('Buffer I/O error on dev dm-0, logical block 16385, lost sync page write')).toEqual({
      kind: 'buffer-io-error',
      device: 'dm-0',
    });
  });

  it('ignores near misses: another subsystem, a remount asked for, a warning', () => {
    expect(classifyKernelMessage('EXT4-fs (dm-3): re-mounted 83bf... ro. Quota mode: none.')).toBeNull();
    expect(classifyKernelMessage('EXT4-fs warning (device dm-3): ext4_end_bio:343: I/O error 10 writing to inode 12')).toBeNull();
    expect(classifyKernelMessage('XFS (dm-1): Mounting V5 Filesystem')).toBeNull();
    expect(classifyKernelMessage('nfs: server 10.0.0.1 not responding, still trying')).toBeNull();
  });
});

describe('dmesg --kernel --time-format iso (no journald)', () => {
  it("reads the 6.1 lab guest's lines of a journal abort from path loss with the kernel's wall time", () => {
    const text = [
      '2026-12-07T11:07:21,902311+00:00 EXT4-fs (dm-0): mounted filesystem with ordered data mode. Quota mode: none.',
      '2026-12-07T11:07:26,274354+00:00 EXT4-fs warning (device dm-0): ext4_end_bio:343: I/O error 10 writing to inode 13 starting block 8513)',
      '2026-12-07T11:07:26,274511+00:00 Buffer I/O error on device dm-0, logical block 8513',
      '2026-12-07T11:07:26,739145+00:00 Aborting journal on device dm-0-8.',
      '2026-12-07T11:07:26,801002+00:00 EXT4-fs error (device dm-0): ext4_journal_check_start:83: comm touch: Detected aborted journal',
      '2026-12-07T11:07:26,801120+00:00 EXT4-fs (dm-0): Remounting filesystem read-only',
      'not a line of dmesg --time-format iso',
    ].join('\n');
    const lines = parseDmesgIso(text, 'b1');
    expect(lines.map((l) => l.kind)).toEqual(['ext4-mounted', 'buffer-io-error', 'journal-aborted', 'ext4-error', 'ext4-remount-ro']);
    expect(lines.at(-1)).toMatchObject({ device: 'dm-0', at: '2026-12-07T11:07:26.801Z', bootId: 'b1' });
  });
});

describe('dumpe2fs -h', () => {
  it('reads the captured header of an ext4 after an error: clean with errors, one error, its time', () => {
    expect(parseDumpe2fsHeader(fixture('host/ext4-error-remount-ro/dumpe2fs-h.txt'))).toMatchObject({
      state: 'clean with errors',
      hasErrors: true,
      clean: false,
      errorCount: 1,
      firstErrorTime: 'Mon Dec  7 09:44:55 2026',
      lastErrorFunction: 'trigger_test_error',
    });
  });

  it('reads not clean with errors', () => {
    expect(parseDumpe2fsHeader(fixture('ext4/dumpe2fs-not-clean-with-errors.txt'))).toMatchObject({
      state: 'not clean with errors',
      hasErrors: true,
      clean: false,
      errorCount: 1,
      firstErrorFunction: 'ext4_find_extent',
      lastErrorTime: 'Tue Dec 27 22:06:16 2022',
    });
  });

  it('reads a checked file system as clean with no errors, and gives nothing for what is not a header', () => {
    expect(parseDumpe2fsHeader('Filesystem state:         clean\nErrors behavior:          Continue\n')).toMatchObject({
      clean: true,
      hasErrors: false,
      errorCount: 0,
      lastErrorTime: null,
    });
    expect(parseDumpe2fsHeader('dumpe2fs 1.47.0 (5-Feb-2023)\ndumpe2fs: Bad magic number in super-block while trying to open /dev/dm-3\n')).toBeNull();
  });
});
