import type { Readable } from 'node:stream';
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import { CappedText } from './capped-text.ts';
import { livingGroupMembers } from './process-group.ts';

// Runs one argv with a hard deadline. The command gets its own process group (detached), so on
// the deadline the whole group is signalled: `sh -c 'dd ... | ...'` leaves no orphan behind.
// We never await execa's promise itself: it waits for stdout/stderr to close, and a grandchild
// stuck in D state keeps them open forever. We wait for the `exit` event and a short drain.
// execa is imported with the first command: an idle agent reads the host but runs nothing.

export interface RunLimits {
  timeoutMs: number;
  /** After SIGTERM, how long the group gets before SIGKILL. */
  killGraceMs: number;
  /** Bytes kept of stdout and of stderr each. */
  maxOutputBytes: number;
}

type Ended = { kind: 'exit'; code: number | null; signal: string | null } | { kind: 'error'; message: string };

const sleep = (ms: number): Promise<'timeout'> => new Promise((r) => setTimeout(r, ms, 'timeout' as const));

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what we wanted.
  }
}

export async function runCommand(argv: readonly string[], limits: RunLimits): Promise<CommandRecord> {
  const [file, ...args] = argv;
  if (!file) throw new Error('runCommand: empty argv');
  const started = performance.now();
  const stdout = new CappedText(limits.maxOutputBytes);
  const stderr = new CappedText(limits.maxOutputBytes);

  const { execa } = await import('execa');
  const child = execa(file, args, {
    detached: true,
    reject: false,
    buffer: false,
    stdin: 'ignore',
    // Stable, parseable messages whatever the node's locale.
    env: { LC_ALL: 'C' },
  });
  child.catch(() => undefined);
  child.stdout?.on('data', (c: Buffer) => stdout.push(c));
  child.stderr?.on('data', (c: Buffer) => stderr.push(c));

  const ended = new Promise<Ended>((resolve) => {
    child.once('exit', (code, signal) => resolve({ kind: 'exit', code, signal }));
    child.once('error', (err) => resolve({ kind: 'error', message: err.message }));
  });

  let timedOut = false;
  let stuckPids: number[] = [];
  let outcome = await Promise.race([ended, sleep(limits.timeoutMs)]);
  const pgid = child.pid;
  if (outcome === 'timeout' && pgid !== undefined) {
    timedOut = true;
    signalGroup(pgid, 'SIGTERM');
    outcome = await Promise.race([ended, sleep(limits.killGraceMs)]);
    // Grandchildren may ignore SIGTERM even when the leader obeyed it: always finish the group.
    signalGroup(pgid, 'SIGKILL');
    if (outcome === 'timeout') outcome = await Promise.race([ended, sleep(Math.min(limits.killGraceMs, 500))]);
    await sleep(50);
    stuckPids = await livingGroupMembers(pgid);
  }
  // Let buffered output arrive, but never wait on a pipe a stuck process still holds.
  await Promise.race([Promise.all([closed(child.stdout), closed(child.stderr)]), sleep(100)]);
  child.stdout?.destroy();
  child.stderr?.destroy();

  const record: CommandRecord = {
    argv: [...argv],
    exitCode: outcome !== 'timeout' && outcome.kind === 'exit' ? outcome.code : null,
    signal: outcome !== 'timeout' && outcome.kind === 'exit' ? outcome.signal : null,
    timedOut,
    durationMs: Math.round(performance.now() - started),
    stdout: stdout.toString(),
    stderr: outcome !== 'timeout' && outcome.kind === 'error' ? `${stderr.toString()}${outcome.message}` : stderr.toString(),
  };
  if (timedOut) record.stuckPids = stuckPids;
  return record;
}

function closed(stream: Readable | null | undefined): Promise<void> {
  if (!stream || stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('close', () => resolve());
    stream.once('end', () => resolve());
  });
}
