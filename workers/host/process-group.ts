import { readdir, readFile } from 'node:fs/promises';

// Which processes of a group are still alive. Read from the agent's own /proc (not the host
// root): the processes we spawn live in our pid namespace even when nsenter changes the mount
// namespace. A process that survives SIGKILL is in uninterruptible sleep (D state), typically
// on I/O to a dead device; it is reported, never waited for.

export interface ProcStat {
  pid: number;
  state: string;
  pgrp: number;
  /** Field 22, clock ticks after boot: a pid plus its start time names one process even across pid reuse. */
  startTime: string | null;
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const fields = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const [state, , pgrp] = fields;
  if (!Number.isInteger(pid) || !state || pgrp === undefined) return null;
  return { pid, state, pgrp: Number(pgrp), startTime: fields[19] ?? null };
}

/** Pids of the group that are not zombies (a zombie is dead, only not yet reaped). */
export async function livingGroupMembers(pgid: number, procRoot = '/proc'): Promise<number[]> {
  const names = await readdir(procRoot).catch(() => [] as string[]);
  const alive: number[] = [];
  for (const name of names) {
    if (!/^[0-9]+$/.test(name)) continue;
    const text = await readFile(`${procRoot}/${name}/stat`, 'utf8').catch(() => null);
    const stat = text === null ? null : parseProcStat(text);
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') alive.push(stat.pid);
  }
  return alive.sort((a, b) => a - b);
}
