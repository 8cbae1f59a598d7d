import type { Queue } from 'bullmq';
import { z } from 'zod';
import { RUNBOOKS } from '../catalogue/jobs.ts';
import { NodeName } from '../catalogue/names.ts';
import { Mode } from '../catalogue/result.ts';
import { consoleState, toIncident, type Incident } from './incident.ts';
import type { IncidentIndex, IndexEntry } from './incident-index.ts';

// A page of incidents, newest first, filtered by node, runbook, state and mode. Bounded whatever
// the store holds: the index is read in chunks, and a page stops after `scanMax` entries even if
// it found fewer matches than it wanted (it then says so and offers the older ones as the next
// page). Node and runbook filter on the index entry; state and mode need the job, read only for
// entries that passed.

export const CONSOLE_STATES = ['parked', 'waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'paused'] as const;

/** The filter as it comes in a query string; anything else is a 400. */
export const IncidentFilter = z.object({
  node: NodeName.optional(),
  runbook: z.enum(RUNBOOKS).optional(),
  state: z.enum(CONSOLE_STATES).optional(),
  mode: Mode.optional(),
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
  /** Most index entries looked at for one page (default 2,000). */
  scanMax?: number;
  /** Entries read from the index at a time (default 200). */
  chunk?: number;
}

export async function listIncidents(index: IncidentIndex, queue: (name: string) => Queue, f: IncidentFilter, o: ListOptions): Promise<IncidentPage> {
  const scanMax = o.scanMax ?? 2_000;
  const chunk = Math.min(o.chunk ?? 200, scanMax);
  const items: Incident[] = [];
  let scanned = 0;
  let cursor = f.before;
  const gone: string[] = [];
  for (;;) {
    const entries = await index.older(cursor, Math.min(chunk, scanMax - scanned));
    if (entries.length === 0) {
      if (gone.length) await index.forget(gone).catch(() => undefined);
      return { items, scanned, partial: false };
    }
    const wanted = entries.filter((e) => (f.node === undefined || e.node === f.node) && (f.runbook === undefined || e.runbook === f.runbook));
    const read = await Promise.all(wanted.map(async (e) => ({ e, incident: await readIncident(queue(e.queue), e, gone) })));
    const matched = new Map<IndexEntry, Incident>();
    for (const { e, incident } of read) {
      if (incident && (f.state === undefined || consoleState(incident) === f.state) && (f.mode === undefined || incident.mode === f.mode)) matched.set(e, incident);
    }
    for (const e of entries) {
      scanned += 1;
      cursor = e.score;
      const i = matched.get(e);
      if (i) items.push(i);
      if (items.length >= o.limit) {
        if (gone.length) await index.forget(gone).catch(() => undefined);
        return { items, next: e.score, scanned, partial: false };
      }
    }
    if (scanned >= scanMax) {
      if (gone.length) await index.forget(gone).catch(() => undefined);
      return { items, ...(cursor !== undefined ? { next: cursor } : {}), scanned, partial: true };
    }
  }
}

async function readIncident(q: Queue, e: IndexEntry, gone: string[]): Promise<Incident | undefined> {
  // State first, then the hash (as JobReader.get: a job finishing in between still shows its result).
  const state = await q.getJobState(e.id);
  const job = state === 'unknown' ? undefined : await q.getJob(e.id);
  if (!job) {
    gone.push(e.member);
    return undefined;
  }
  return toIncident(job, e.queue, state);
}
