import type { CommandRecord } from '../../../src/core/catalogue/result.ts';
import type { Host } from '../../host/host.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { devPath } from '../../host/paths.ts';
import type { ProbeFacts } from './facts.ts';

// The read probe of docs/safety.md (residual-multipath-cleanup): one direct 1 MiB read of the map, in its own process group
// with a hard deadline. A dead map with queue_if_no_path never answers: the Host kills the group
// at the deadline and reports what survived SIGKILL (D state); we count the map as unreadable
// and never wait for those processes. Probes of several maps run at once, so a job with N dead
// maps takes about one deadline, not N.

export function probeArgv(host: Host, dm: string): string[] {
  return ['dd', `if=${host.argPath(devPath(dm, 'dm'))}`, 'of=/dev/null', 'count=1', 'bs=1M', 'iflag=direct'];
}

export function probeOutcome(r: CommandRecord): ProbeFacts {
  const base = { durationMs: r.durationMs, exitCode: r.exitCode, stuckPids: r.stuckPids ?? [] };
  const err = r.stderr.trim().split('\n').filter(Boolean).slice(-1)[0] ?? '';
  if (wasSimulated(r)) return { ...base, outcome: 'not-run', detail: 'the probe was not run (dry-run host)' };
  if (r.timedOut) {
    const stuck = base.stuckPids.length ? `; still stuck after SIGKILL: ${base.stuckPids.join(', ')}` : '';
    return { ...base, outcome: 'timed-out', detail: `no answer within ${r.durationMs} ms, abandoned${stuck}` };
  }
  if (r.exitCode === 0) return { ...base, outcome: 'readable', detail: 'read 1 MiB' };
  return { ...base, outcome: 'io-error', detail: err || `exit code ${r.exitCode ?? 'none'}` };
}

/** Probes every map at once; resolves when the slowest probe answered or was abandoned. */
export async function probeMaps(host: Host, dms: readonly string[], timeoutMs: number): Promise<Map<string, ProbeFacts>> {
  const results = await Promise.all(dms.map(async (dm) => [dm, probeOutcome(await host.run(probeArgv(host, dm), { timeoutMs }))] as const));
  return new Map(results);
}
