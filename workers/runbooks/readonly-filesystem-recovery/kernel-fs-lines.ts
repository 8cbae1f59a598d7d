import { z } from '../../../src/core/zod.ts';

// The kernel's lines about a file system it stopped, from `journalctl -k -o json` (one JSON object
// a line; docs/decisions/0008 §3.2). The agent does not read /dev/kmsg: NPD consumes it and it
// needs CAP_SYSLOG. Each line keeps the journal's time (__REALTIME_TIMESTAMP, microseconds since
// the epoch) and boot (_BOOT_ID), so a claim can ask "after this device was mounted, in this boot".
// Lines that are not JSON, or carry no MESSAGE, are counted and skipped, never guessed at.

export type KernelFsLineKind =
  | 'ext4-remount-ro'
  | 'ext4-error'
  | 'journal-aborted'
  | 'buffer-io-error'
  | 'block-io-error'
  | 'xfs-shutdown'
  | 'xfs-shut-down'
  | 'ext4-mounted';

export interface KernelFsLine {
  kind: KernelFsLineKind;
  /** The device as the kernel named it (`dm-17`, `sdb7`); for a journal, without its `-8` suffix. */
  device: string;
  /** ISO 8601, from __REALTIME_TIMESTAMP; null when the record has none. */
  at: string | null;
  bootId: string | null;
  message: string;
}

// Most specific first: one message is one kind.
const PATTERNS: ReadonlyArray<readonly [KernelFsLineKind, RegExp]> = [
  ['ext4-remount-ro', /EXT4-fs \((?<dev>[^)]+)\): Remounting filesystem read-only/],
  ['ext4-error', /EXT4-fs error \(device (?<dev>[^)]+)\): (?<fn>\w+):(?<line>\d+): (?<rest>.*)/],
  ['journal-aborted', /Aborting journal on device (?<dev>[^ ]+)-\d+\./],
  // `on dev dm-3, logical block N, lost async page write`; 6.1 also writes `on device dm-0, logical block N`.
  ['buffer-io-error', /Buffer I\/O error on dev(?:ice)? (?<dev>[^\s,]+), logical block \d+/],
  ['block-io-error', /I\/O error, dev (?<dev>[^\s,]+), sector \d+/],
  ['xfs-shutdown', /XFS \((?<dev>[^)]+)\): .*Shutting down filesystem/],
  ['xfs-shut-down', /XFS \((?<dev>[^)]+)\): Filesystem has been shut down/],
  // Not a problem: when the device was mounted in this boot (errors before it are another mount's).
  ['ext4-mounted', /EXT4-fs \((?<dev>[^)]+)\): mounted filesystem/],
];

const JournalRecord = z.object({
  MESSAGE: z.optional(z.union([z.string(), z.array(z.number())])),
  __REALTIME_TIMESTAMP: z.optional(z.string()),
  _BOOT_ID: z.optional(z.string()),
});

/** journald gives a message that is not valid UTF-8 as an array of bytes. */
const messageText = (m: string | number[]): string => (typeof m === 'string' ? m : Buffer.from(m).toString('utf8'));

function isoOfMicros(v: string | undefined): string | null {
  if (!v || !/^\d{1,20}$/.test(v)) return null;
  const ms = Number(BigInt(v) / 1000n);
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** The kind and device of one kernel message, or null when it is none of ours. */
export function classifyKernelMessage(message: string): { kind: KernelFsLineKind; device: string } | null {
  for (const [kind, re] of PATTERNS) {
    const dev = re.exec(message)?.groups?.['dev'];
    if (dev) return { kind, device: dev };
  }
  return null;
}

export function parseKernelJournal(text: string): { lines: KernelFsLine[]; unreadable: number } {
  const lines: KernelFsLine[] = [];
  let unreadable = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let record: z.infer<typeof JournalRecord>;
    try {
      const parsed = JournalRecord.safeParse(JSON.parse(raw));
      if (!parsed.success || parsed.data.MESSAGE === undefined) {
        unreadable++;
        continue;
      }
      record = parsed.data;
    } catch {
      unreadable++;
      continue;
    }
    const message = messageText(record.MESSAGE ?? '');
    const found = classifyKernelMessage(message);
    if (!found) continue;
    lines.push({ ...found, at: isoOfMicros(record.__REALTIME_TIMESTAMP), bootId: record._BOOT_ID ?? null, message });
  }
  return { lines, unreadable };
}

/**
 * The kernel names a partition or a journal by its own device (`sdb7`, `dm-3`); a line is about
 * `device` when it names it exactly. A disk's line (`sdc`) is about a path of a map, not the map:
 * the caller asks for each path separately.
 */
export const linesAbout = (lines: readonly KernelFsLine[], device: string): KernelFsLine[] => lines.filter((l) => l.device === device);

/**
 * `dmesg --kernel --time-format iso` (`2026-12-07T11:07:26,123456+00:00 EXT4-fs (dm-0): ...`): the
 * kernel's ring buffer, read without consuming it, where no journald keeps the kernel's log (a node
 * without systemd-journald; the lab guest). The times are the kernel's own estimate of wall time;
 * every line is of this boot.
 */
export function parseDmesgIso(text: string, bootId: string | null): KernelFsLine[] {
  const lines: KernelFsLine[] = [];
  for (const raw of text.split('\n')) {
    const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}),(\d{1,9})([+-]\d{2}:?\d{2}) (.*)$/.exec(raw);
    if (!m) continue;
    const message = m[4] ?? '';
    const found = classifyKernelMessage(message);
    if (!found) continue;
    const t = Date.parse(`${m[1]}.${(m[2] ?? '0').slice(0, 3).padEnd(3, '0')}${m[3]}`);
    lines.push({ ...found, at: Number.isNaN(t) ? null : new Date(t).toISOString(), bootId, message });
  }
  return lines;
}
