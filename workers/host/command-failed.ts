import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import { TransientError } from '../../src/core/errors.ts';
import { wasSimulated } from './audit-host.ts';

// Exit codes are mapped to errors in one place. A failed or timed-out command is transient: the
// world may change (a device frees up, a hung probe clears); interlocks that must not be retried
// are RefusedErrors thrown by the runbook itself.

export class CommandFailedError extends TransientError {
  override name = 'CommandFailedError';
  readonly record: CommandRecord;
  constructor(record: CommandRecord) {
    super(describeFailure(record));
    this.record = record;
  }
}

export function describeFailure(r: CommandRecord): string {
  const cmd = r.argv.join(' ');
  if (r.timedOut) {
    const stuck = r.stuckPids && r.stuckPids.length > 0 ? `; still alive after SIGKILL (D state?): ${r.stuckPids.join(', ')}` : '';
    return `timed out after ${r.durationMs} ms and was killed: ${cmd}${stuck}`;
  }
  const why = r.exitCode !== null ? `exit code ${r.exitCode}` : `signal ${r.signal ?? 'unknown'}`;
  const err = r.stderr.trim().split('\n').slice(-1)[0] ?? '';
  return `${cmd} failed (${why})${err ? `: ${err}` : ''}`;
}

/** The record, when the command succeeded (or was only simulated by a dry-run host). */
export function expectOk(record: CommandRecord): CommandRecord {
  if (record.exitCode === 0 || wasSimulated(record)) return record;
  throw new CommandFailedError(record);
}
