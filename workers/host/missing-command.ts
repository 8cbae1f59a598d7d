import type { CommandRecord } from '../../src/core/catalogue/result.ts';

/**
 * The program is not there: spawn's ENOENT (no exit code), a shell's 127, or nsenter's "failed to
 * execute X: No such file or directory" (the agent runs host commands through nsenter).
 */
export function isMissingCommand(r: CommandRecord): boolean {
  if (r.timedOut) return false;
  if (r.exitCode === 127) return true;
  if (r.exitCode === null && r.signal === null && /\bENOENT\b/.test(r.stderr)) return true;
  return /failed to execute \S+: No such file or directory/.test(r.stderr);
}
