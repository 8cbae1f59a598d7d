import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { Host } from './host.ts';
import { excerpt } from './capped-text.ts';
import { isReadOnlyCommand } from './read-only-commands.ts';

// A Host wrapper that writes the audit trail: every command and every change the runbook makes
// through it, as CommandRecords. File changes the agent makes itself (no process) appear as
// `host:<op>` entries so one list shows everything that touched the node.
// With `simulate`, it is the dry-run host: looks (reads, read-only commands) go through, changes
// are only recorded, with exit code null. Callers tell a simulated record by wasSimulated().

export interface AuditHostOptions {
  simulate: boolean;
  /** Receives a result-sized copy (output excerpts) of every record. */
  sink: (record: CommandRecord) => void;
  /** Characters of stdout/stderr kept in the audit copy. Default 2048. */
  excerptChars?: number;
}

const simulated = new WeakSet<CommandRecord>();

/** True when a dry-run host answered this record without running anything. */
export function wasSimulated(record: CommandRecord): boolean {
  return simulated.has(record);
}

const notRun = (argv: string[]): CommandRecord => {
  const record: CommandRecord = { argv, exitCode: null, signal: null, timedOut: false, durationMs: 0, stdout: '', stderr: '' };
  simulated.add(record);
  return record;
};

export function createAuditHost(inner: Host, options: AuditHostOptions): Host {
  const chars = options.excerptChars ?? 2048;
  const audit = (r: CommandRecord): void => options.sink({ ...r, argv: [...r.argv], stdout: excerpt(r.stdout, chars), stderr: excerpt(r.stderr, chars) });

  /** A file change: done (and recorded with exit 0) or, when simulating, only recorded. */
  async function change(argv: string[], act: () => Promise<unknown>): Promise<void> {
    if (options.simulate) {
      audit(notRun(argv));
      return;
    }
    const started = performance.now();
    try {
      await act();
      audit({
        argv,
        exitCode: 0,
        signal: null,
        timedOut: false,
        durationMs: Math.round(performance.now() - started),
        stdout: '',
        stderr: '',
      });
    } catch (err) {
      audit({
        argv,
        exitCode: 1,
        signal: null,
        timedOut: false,
        durationMs: Math.round(performance.now() - started),
        stdout: '',
        stderr: (err as Error).message,
      });
      throw err;
    }
  }

  return {
    async run(argv, runOptions) {
      if (options.simulate && !isReadOnlyCommand(argv)) {
        const record = notRun([...argv]);
        audit(record);
        return record;
      }
      const record = await inner.run(argv, runOptions);
      audit(record);
      return record;
    },
    argPath: (p) => inner.argPath(p),
    readFile: (p) => inner.readFile(p),
    readlink: (p) => inner.readlink(p),
    lstat: (p) => inner.lstat(p),
    list: (d) => inner.list(d),
    writeFile: (p, data) =>
      change(['host:write-file', p, `${typeof data === 'string' ? Buffer.byteLength(data) : data.length} bytes`], () => inner.writeFile(p, data)),
    writeSysfs: (p, value) => change(['host:write-sysfs', p, value], () => inner.writeSysfs(p, value)),
    symlink: (target, p) => change(['host:symlink', target, p], () => inner.symlink(target, p)),
    rename: (from, to) => change(['host:rename', from, to], () => inner.rename(from, to)),
    mkdir: (p) => change(['host:mkdir', p], () => inner.mkdir(p)),
    async unlink(p) {
      let removed = false;
      await change(['host:unlink', p], async () => {
        removed = await inner.unlink(p);
      });
      return removed;
    },
  };
}
