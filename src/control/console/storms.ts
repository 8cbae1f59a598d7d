import type { IncidentIndex, IndexEntry } from '../../adapters/jobstore/incident-index.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { jobStates, type JobStateName } from '../../adapters/jobstore/job-states.ts';

// A storm reads as one incident: after a power loss the same runbook runs on hundreds of nodes
// within minutes, and the incidents list was one row per job. A storm here is the jobs of one
// runbook stored in one burst (no gap longer than `gapMs` between two of them, newest first in
// the index), on at least `minNodes` nodes, with at least `minJobs` jobs: the cause they share is
// the burst (one outage's alerts arrive together, Alertmanager groups and all). Read from the
// newest `scanMax` index entries, with the state of every member's job (job-states.ts) for the
// counts by state; the console shows one line per storm and its member rows when opened.

export interface Storm {
  runbook: string;
  /** Index scores (store time ms * 1000 + place) of its newest and oldest job. */
  newest: number;
  oldest: number;
  jobs: number;
  nodes: number;
  /** The most jobs of the storm on one node. */
  mostOnOneNode: number;
  byState: Record<JobStateName, number>;
  /** Index members of its jobs (the list leaves them out: the storm's line stands for them). */
  members: ReadonlySet<string>;
}

export interface StormOptions {
  /** Newest index entries looked at (default 10,000). */
  scanMax?: number;
  /** The longest gap between two jobs of one storm (default 10 min). */
  gapMs?: number;
  /** Fewest jobs (default 20) and nodes (default 10) that make a storm. */
  minJobs?: number;
  minNodes?: number;
  /** Entries read from the index at a time (default 2,000). */
  chunk?: number;
}

/** Groups newest-first entries into bursts per runbook: pure, for the tests and findStorms. */
export function bursts(entries: readonly IndexEntry[], gapMs: number): IndexEntry[][] {
  const open = new Map<string, IndexEntry[]>();
  const done: IndexEntry[][] = [];
  for (const e of entries) {
    const cur = open.get(e.runbook);
    // Scores are ms * 1000: the gap to the last (newer) member of this runbook's burst.
    if (cur && (cur[cur.length - 1]!.score - e.score) / 1000 <= gapMs) cur.push(e);
    else {
      if (cur) done.push(cur);
      open.set(e.runbook, [e]);
    }
  }
  done.push(...open.values());
  return done;
}

export async function findStorms(index: IncidentIndex, redis: RedisConnection, prefix: string, o: StormOptions = {}): Promise<Storm[]> {
  const scanMax = o.scanMax ?? 10_000;
  const chunk = o.chunk ?? 2_000;
  const entries: IndexEntry[] = [];
  for (let before: number | undefined; entries.length < scanMax; ) {
    const read = await index.older(before, Math.min(chunk, scanMax - entries.length));
    if (read.length === 0) break;
    entries.push(...read);
    before = read[read.length - 1]!.score;
  }
  const minJobs = o.minJobs ?? 20;
  const minNodes = o.minNodes ?? 10;
  const groups = bursts(entries, o.gapMs ?? 600_000).filter((g) => g.length >= minJobs && new Set(g.map((e) => e.node ?? '')).size >= minNodes);
  const states = await jobStates(redis, prefix, groups.flat());
  let at = 0;
  return groups
    .map((g) => {
      const byState = { completed: 0, failed: 0, parked: 0, delayed: 0, active: 0, waiting: 0, gone: 0 } as Record<JobStateName, number>;
      const perNode = new Map<string, number>();
      for (const e of g) {
        byState[states[at++]!] += 1;
        perNode.set(e.node ?? '', (perNode.get(e.node ?? '') ?? 0) + 1);
      }
      return {
        runbook: g[0]!.runbook,
        newest: g[0]!.score,
        oldest: g[g.length - 1]!.score,
        jobs: g.length,
        nodes: perNode.size,
        mostOnOneNode: Math.max(...perNode.values()),
        byState,
        members: new Set(g.map((e) => e.member)),
      };
    })
    .sort((a, b) => b.newest - a.newest);
}
