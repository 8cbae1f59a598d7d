import type { JobReads } from '../../core/jobs/job-store.ts';
import { z } from 'zod';
import { RUNBOOKS } from '../../core/catalogue/jobs.ts';
import { NodeName } from '../../core/catalogue/names.ts';
import { Mode } from '../../core/catalogue/result.ts';
import { COUNTED_STATES } from './state-counts.ts';
import { consoleState, toIncident, type Incident } from './incident.ts';
import type { IncidentIndex, IndexEntry } from '../../adapters/jobstore/incident-index.ts';

// A page of incidents, newest first, filtered by node, runbook, state and mode. Bounded whatever
// the store holds, and reading no more than the page needs (bench/console.ts):
// - node and runbook filter on the index entry alone (no Redis call per entry): up to `scanMax`
//   entries are looked at, read from the index `chunk` at a time;
// - a state filter first asks Redis one small question per remaining entry (is the job in its
//   queue's failed set, wait list, ...; pipelined), for at most `checkMax` entries;
// - only then are jobs read (state and hash), and only as many as the page still lacks.
// A page that stops at a bound before it is full says so and offers the older ones as the next
// page. Entries whose job is gone (retention) are dropped from the index when a read meets them.

/** What the incidents list filters by: a parked job (delayed by the engine, core/jobs) and every counted state. */
export const CONSOLE_STATES = ['parked', ...COUNTED_STATES] as const;

/** `last`: a window back from now, kept relative in the URL (a bookmark of "last 24h" stays that). */
export const LAST_WINDOWS = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;

/**
 * An instant as a query string gives it: ISO 8601, or what a datetime-local field sends
 * (`2026-12-04T08:30`), read as UTC when it names no zone.
 */
const Instant = z
  .string()
  .trim()
  .max(40)
  .regex(/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/, 'a date and time: 2026-12-04T08:30Z')
  .refine((v) => !Number.isNaN(instantMs(v)), 'not a real date');

/** Epoch ms of an Instant (UTC when it names no zone). */
export function instantMs(v: string): number {
  const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(v) || !v.includes('T') ? v : `${v}Z`;
  return Date.parse(zoned);
}

/** The filter as it comes in a query string; anything else is a 400. */
export const IncidentFilter = z.object({
  node: z.optional(NodeName),
  runbook: z.enum(RUNBOOKS).optional(),
  state: z.enum(CONSOLE_STATES).optional(),
  mode: z.optional(Mode),
  /** Stored at or after this instant. */
  since: Instant.optional(),
  /** Stored before this instant. */
  until: Instant.optional(),
  /** Stored within this window back from now (with since: the later of the two). */
  last: z.enum(Object.keys(LAST_WINDOWS) as [keyof typeof LAST_WINDOWS, ...(keyof typeof LAST_WINDOWS)[]]).optional(),
  /** Cursor: entries older than this index score. */
  before: z.coerce.number().int().positive().optional(),
});
export type IncidentFilter = z.infer<typeof IncidentFilter>;

export interface IncidentPage {
  items: Incident[];
  /** The cursor of the next (older) page, when there may be one. */
  next?: number;
  /** Index entries looked at. */
  scanned: number;
  /** The scan stopped at scanMax before the page was full: older matches may exist. */
  partial: boolean;
}

export interface ListOptions {
  limit: number;
  /** Most index entries looked at for one page (default 10,000). */
  scanMax?: number;
  /** Most entries whose state is asked of Redis for one page, with a state filter (default 2,000). */
  checkMax?: number;
  /** Entries read from the index at a time (default 500). */
  chunk?: number;
  /** For `last` (default Date.now). */
  now?: () => number;
  /** Entries left out of the page (a storm's members: its one line stands for them). */
  exclude?: (e: IndexEntry) => boolean;
}

/** The filter's time window as index scores (ms * 1000 + place in batch): [min, max). */
function scoreWindow(f: Pick<IncidentFilter, 'since' | 'until' | 'last'>, now: number): { min?: number; max?: number } {
  const from = [f.since !== undefined ? instantMs(f.since) : undefined, f.last !== undefined ? now - LAST_WINDOWS[f.last] : undefined].filter(
    (x): x is number => x !== undefined,
  );
  return {
    ...(from.length ? { min: Math.max(...from) * 1000 } : {}),
    ...(f.until !== undefined ? { max: instantMs(f.until) * 1000 } : {}),
  };
}

/** The entries whose job is (now) in `state`: one small question each, all in flight at once. A parked job is a delayed one. */
async function inState(jobs: JobReads, entries: readonly IndexEntry[], state: (typeof CONSOLE_STATES)[number]): Promise<IndexEntry[]> {
  const found = await jobs.areIn(state === 'parked' ? 'delayed' : state, entries);
  return entries.filter((_, i) => found[i]);
}

/** Index entries older than `before`, newest first, `chunk` at a time: the whole index, or a node's entries (found by Redis). */
// The time window on the index's own order (newest first): `until` is where the scan starts,
// `since` where it stops, so a window costs no job read outside it.
async function* entriesOf(
  index: IncidentIndex,
  f: IncidentFilter,
  chunk: number,
  scanMax: number,
  window: { min?: number; max?: number },
): AsyncGenerator<IndexEntry[]> {
  const inWindow = (e: IndexEntry): boolean => (window.min === undefined || e.score >= window.min) && (window.max === undefined || e.score < window.max);
  if (f.node !== undefined) {
    const all = (await index.ofNode(f.node, Number.MAX_SAFE_INTEGER))
      .filter((e) => (f.before === undefined || e.score < f.before) && inWindow(e))
      .slice(0, scanMax);
    for (let i = 0; i < all.length; i += chunk) yield all.slice(i, i + chunk);
    return;
  }
  let cursor = window.max !== undefined && (f.before === undefined || window.max < f.before) ? window.max : f.before;
  for (let scanned = 0; scanned < scanMax; ) {
    const read = await index.older(cursor, Math.min(chunk, scanMax - scanned));
    if (read.length === 0) return;
    scanned += read.length;
    cursor = read[read.length - 1]!.score;
    const entries = window.min === undefined ? read : read.filter((e) => e.score >= window.min!);
    if (entries.length > 0) yield entries;
    if (entries.length < read.length) return;
  }
}

/** Entries whose state is asked at a time with a state filter: a first page of a common state asks about a slice or two. */
const CHECK_SLICE = 100;

export async function listIncidents(index: IncidentIndex, jobs: JobReads, f: IncidentFilter, o: ListOptions): Promise<IncidentPage> {
  const scanMax = o.scanMax ?? 10_000;
  const checkMax = o.checkMax ?? 2_000;
  const chunk = Math.min(o.chunk ?? 500, scanMax);
  const items: Incident[] = [];
  const gone: string[] = [];
  let scanned = 0;
  let checked = 0;
  let last: number | undefined;
  const done = async (page: IncidentPage): Promise<IncidentPage> => {
    if (gone.length) await index.forget(gone).catch(() => undefined);
    return page;
  };
  const partial = () => done({ items, ...(last !== undefined ? { next: last } : {}), scanned, partial: true });
  const window = scoreWindow(f, (o.now ?? Date.now)());
  for await (const entries of entriesOf(index, f, chunk, scanMax, window)) {
    const wanted = entries.filter(
      (e) => (f.node === undefined || e.node === f.node) && (f.runbook === undefined || e.runbook === f.runbook) && !o.exclude?.(e),
    );
    // Candidates in order, a slice at a time: with a state filter only those Redis places in that
    // state (at most checkMax asked per page), then their jobs read, only as many as the page lacks.
    const incidents = new Map<IndexEntry, Incident>();
    let stopAt: IndexEntry | undefined;
    for (let i = 0; i < wanted.length && incidents.size < o.limit - items.length; ) {
      let slice = wanted.slice(i, i + (f.state !== undefined ? CHECK_SLICE : o.limit - items.length - incidents.size));
      i += slice.length;
      if (f.state !== undefined) {
        const room = checkMax - checked;
        if (room <= 0) {
          stopAt = slice[0];
          break;
        }
        if (slice.length > room) {
          // The first entry not asked about: the page ends before it, the next page starts there.
          stopAt = slice[room];
          slice = slice.slice(0, room);
        }
        checked += slice.length;
        slice = await inState(jobs, slice, f.state);
      }
      for (let j = 0; j < slice.length && incidents.size < o.limit - items.length; ) {
        const batch = slice.slice(j, j + (o.limit - items.length - incidents.size));
        j += batch.length;
        const read = await Promise.all(batch.map(async (e) => ({ e, incident: await readIncident(jobs, e, gone) })));
        for (const { e, incident } of read) {
          if (incident && (f.state === undefined || consoleState(incident) === f.state) && (f.mode === undefined || incident.mode === f.mode))
            incidents.set(e, incident);
        }
      }
      if (stopAt) break;
    }
    for (const e of entries) {
      if (e === stopAt) return partial();
      scanned += 1;
      last = e.score;
      const i = incidents.get(e);
      if (i) items.push(i);
      if (items.length >= o.limit) return done({ items, next: e.score, scanned, partial: false });
    }
  }
  return scanned >= scanMax ? partial() : done({ items, scanned, partial: false });
}

async function readIncident(jobs: JobReads, e: IndexEntry, gone: string[]): Promise<Incident | undefined> {
  // State first, then the hash (as JobStore.find: a job finishing in between still shows its result).
  const state = await jobs.state(e.queue, e.id);
  const job = state === 'unknown' ? undefined : await jobs.get(e.queue, e.id);
  if (!job) {
    gone.push(e.member);
    return undefined;
  }
  return toIncident(job, e.queue, state);
}
