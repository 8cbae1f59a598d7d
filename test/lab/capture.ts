// Captures what the residual-multipath runbook observes on a host, as real fixture files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LabVm } from './vm.ts';

interface CaptureSpec {
  file: string;
  /** argv (no shell) or a bash script, run in the guest. */
  cmd: readonly string[] | string;
}

/** The observations docs/safety.md names for residual-multipath-cleanup, one file each. */
const MULTIPATH_CAPTURES: readonly CaptureSpec[] = [
  { file: 'multipath-ll.txt', cmd: ['multipath', '-ll'] },
  { file: 'multipathd-show-maps-json.json', cmd: ['multipathd', 'show', 'maps', 'json'] },
  { file: 'multipathd-show-maps.txt', cmd: ['multipathd', 'show', 'maps'] },
  { file: 'multipathd-show-paths.txt', cmd: ['multipathd', 'show', 'paths'] },
  { file: 'multipathd-show-paths-format.txt', cmd: ['multipathd', 'show', 'paths', 'format', '%d %w %t %T %o %m %D'] },
  { file: 'dmsetup-info-c.txt', cmd: ['dmsetup', 'info', '-c'] },
  { file: 'dmsetup-table.txt', cmd: ['dmsetup', 'table'] },
  { file: 'dmsetup-status.txt', cmd: ['dmsetup', 'status'] },
  { file: 'sys-block-dm-slaves-holders.txt', cmd: 'ls -l /sys/block/dm-*/slaves /sys/block/dm-*/holders' },
  { file: 'sys-block-dm-uuid-name.txt', cmd: 'grep -H . /sys/block/dm-*/dm/uuid /sys/block/dm-*/dm/name' },
  { file: 'sys-block-sd-device-state.txt', cmd: 'grep -H . /sys/block/sd*/device/state' },
  { file: 'dev-disk-by-id.txt', cmd: 'ls -l /dev/disk/by-id/' },
  { file: 'proc-self-mountinfo.txt', cmd: ['cat', '/proc/self/mountinfo'] },
  { file: 'lsscsi.txt', cmd: ['lsscsi'] },
];

export interface CapturedFile {
  file: string;
  command: string;
  code: number | null;
  /** Kept in the index when not empty (warnings such as multipath's are part of real output). */
  stderr?: string;
  stdout: string;
}

export async function captureMultipathState(vm: LabVm, specs = MULTIPATH_CAPTURES): Promise<CapturedFile[]> {
  const out: CapturedFile[] = [];
  for (const s of specs) {
    const r = await vm.run(s.cmd, { timeoutMs: 30_000 });
    out.push({
      file: s.file,
      command: typeof s.cmd === 'string' ? s.cmd : s.cmd.map((a) => (/[\s%"]/.test(a) ? JSON.stringify(a) : a)).join(' '),
      code: r.code,
      ...(r.stderr.trim() ? { stderr: r.stderr } : {}),
      stdout: r.stdout,
    });
  }
  return out;
}

/**
 * Writes one scenario's captures to `dir`: each output in its own file, and index.json with the
 * commands, exit codes, stderr and where they came from (kernel, multipath-tools version).
 */
export function writeFixtureDir(dir: string, scenario: string, description: string, captured: readonly CapturedFile[], meta: Record<string, unknown>): void {
  mkdirSync(dir, { recursive: true });
  for (const c of captured) writeFileSync(join(dir, c.file), c.stdout);
  const index = {
    scenario,
    description,
    source: 'volume-medic lab guest (test/lab/harness.lab.test.ts): real kernel under qemu',
    ...meta,
    files: captured.map(({ stdout: _stdout, ...rest }) => rest),
  };
  writeFileSync(join(dir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
}
