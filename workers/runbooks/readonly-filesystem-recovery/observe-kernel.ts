import { posix } from 'node:path';
import { wasSimulated } from '../../host/audit-host.ts';
import { describeFailure } from '../../host/command-failed.ts';
import type { Host } from '../../host/host.ts';
import type { KernelFacts, SysfsErrors } from './facts.ts';
import { type KernelFsLine, parseDmesgIso, parseKernelJournal } from './kernel-fs-lines.ts';

// Did the kernel report an error for this device, in this boot, after it was mounted (docs/decisions/0008
// §3.3)? Two sources: the kernel log through journald, and what ext4 keeps in sysfs
// (errors_count, last_error_time), which survives a journal that rotated or a log that was cut.

/**
 * This boot's kernel log, newest first and MESSAGE only (journald always adds its time and boot):
 * the host keeps the head of a command's output up to its limit, so the newest lines must come first.
 */
const KERNEL_LOG_ARGV = ['journalctl', '-k', '-o', 'json', '--no-pager', '--boot', '--reverse', '--output-fields=MESSAGE'] as const;

/** journald's _BOOT_ID is /proc's boot_id without dashes. */
const sameBoot = (journal: string | null, proc: string | null): boolean =>
  journal === null || proc === null || journal.replace(/-/g, '') === proc.replace(/-/g, '');

/** The ring buffer, where no journald keeps the kernel's log: read, never consumed (no -c). */
const DMESG_ARGV = ['dmesg', '--kernel', '--time-format', 'iso'] as const;

type KernelLog = { ok: true; lines: KernelFsLine[]; truncated: boolean } | { ok: false; why: string };

async function readDmesg(host: Host, bootId: string | null, timeoutMs: number, journalWhy: string): Promise<KernelLog> {
  const r = await host.run(DMESG_ARGV, { timeoutMs });
  if (wasSimulated(r) || r.exitCode !== 0 || r.timedOut) return { ok: false, why: `${journalWhy}; dmesg: ${wasSimulated(r) ? 'not run' : describeFailure(r)}` };
  return { ok: true, lines: parseDmesgIso(r.stdout, bootId), truncated: /\n\[\.\.\. \d+ more bytes dropped\]$/.test(r.stdout) };
}

export async function readKernelLog(host: Host, bootId: string | null, timeoutMs: number): Promise<KernelLog> {
  const r = await host.run(KERNEL_LOG_ARGV, { timeoutMs });
  if (wasSimulated(r)) return { ok: false, why: 'journalctl was not run' };
  if (r.exitCode !== 0 || r.timedOut) return readDmesg(host, bootId, timeoutMs, `journalctl: ${describeFailure(r)}`);
  const parsed = parseKernelJournal(r.stdout);
  // No kernel record at all in this boot: no journald keeps the kernel's log here.
  if (parsed.lines.length === 0 && !/"MESSAGE"/.test(r.stdout)) return readDmesg(host, bootId, timeoutMs, 'journalctl has no kernel record of this boot');
  const lines = parsed.lines.filter((l) => sameBoot(l.bootId, bootId)).sort((a, b) => (a.at ?? '').localeCompare(b.at ?? ''));
  return { ok: true, lines, truncated: /\n\[\.\.\. \d+ more bytes dropped\]$/.test(r.stdout) };
}

/**
 * The lines about one device and since when it is mounted. A multipath map's block-layer lines
 * name its path disks: those count as context (`paths`), never as the map's own error.
 */
export function kernelFactsFor(log: KernelLog, dev: string, paths: readonly string[]): KernelFacts {
  if (!log.ok) return log;
  const about = log.lines.filter((l) => l.device === dev || paths.includes(l.device));
  const mounted = about.filter((l) => l.kind === 'ext4-mounted' && l.device === dev).at(-1);
  return { ok: true, lines: about, mountedAt: mounted?.at ?? null, truncated: log.truncated };
}

const numberIn = (text: string | null): number | null => (text !== null && /^\d+$/.test(text.trim()) ? Number(text.trim()) : null);

export async function readSysfsErrors(host: Host, dev: string): Promise<SysfsErrors> {
  const at = (f: string): Promise<string | null> => host.readFile(posix.join('/sys/fs/ext4', dev, f)).catch(() => null);
  const options = await host.readFile(posix.join('/proc/fs/ext4', dev, 'options')).catch(() => null);
  return {
    errorsCount: numberIn(await at('errors_count')),
    lastErrorTime: numberIn(await at('last_error_time')),
    remountRo: options === null ? null : options.split('\n').includes('errors=remount-ro'),
  };
}

/**
 * Whether the device was mounted again after `since` (its kernel line `mounted filesystem`): Linux
 * gives a new mount the lowest free mount id, so the ids of an unmounted and a new mount can be
 * the same, and on 6.1 both carry rw options; the kernel's line tells them apart. null: unknown.
 */
export async function mountedAgainSince(host: Host, device: string, since: string, timeoutMs: number): Promise<boolean | null> {
  const bootId = (await host.readFile('/proc/sys/kernel/random/boot_id').catch(() => null))?.trim() ?? null;
  const log = await readKernelLog(host, bootId, timeoutMs);
  if (!log.ok) return null;
  return log.lines.some((l) => l.device === device && l.kind === 'ext4-mounted' && (l.at ?? '') > since);
}
