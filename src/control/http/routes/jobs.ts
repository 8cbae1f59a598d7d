import type { JobStore } from '../../../core/jobs/job-store.ts';
import { Router } from 'express';
import { z } from 'zod';
import { JOB_ID } from '../../../core/catalogue/idempotency-keys.ts';
import type { Incident } from '../../console/incident.ts';
import { IncidentFilter, listIncidents } from '../../console/incident-list.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import type { IncidentIndex } from '../../../adapters/jobstore/incident-index.ts';
import type { JobReader, JobSummary } from '../job-reader.ts';

// The jobs API reads what the console reads: the index of incidents, newest first, a page at a
// time (src/control/console/incident-list.ts), so a list costs the page, not one read per queue.

const ListQuery = IncidentFilter.extend({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export interface JobRoutesDeps {
  reader: JobReader;
  incidents: IncidentIndex;
  jobs: JobStore;
}

/** A job as the list shows it: the console's incident, without its steps and evidence. */
function summaryOf(i: Incident): JobSummary & { mode?: string; summary?: string; waiting?: Incident['waiting'] } {
  return {
    id: i.id,
    queue: i.queue,
    runbook: i.runbook,
    ...(i.node ? { node: i.node } : {}),
    ...(i.recordNames ? { recordNames: i.recordNames } : {}),
    state: i.state,
    attemptsMade: i.attemptsMade,
    createdAt: i.createdAt,
    ...(i.finishedAt ? { finishedAt: i.finishedAt } : {}),
    ...(i.failedReason ? { failedReason: i.failedReason } : {}),
    ...(i.outcome ? { outcome: i.outcome } : {}),
    ...(i.mode ? { mode: i.mode } : {}),
    ...(i.summary ? { summary: i.summary } : {}),
    ...(i.waiting ? { waiting: i.waiting } : {}),
  };
}

export function jobRoutes(deps: JobRoutesDeps): Router {
  const r = Router();
  r.get('/v1/jobs', async (req, res) => {
    const q = ListQuery.safeParse(req.query);
    if (!q.success) return res.status(400).json({ error: describeZodError(q.error) });
    const { limit, ...filter } = q.data;
    const page = await listIncidents(deps.incidents, deps.jobs, filter, { limit });
    // `next`: pass it as `before` for the older page; `partial`: the read stopped at its bound first.
    return res.json({
      jobs: page.items.map(summaryOf),
      ...(page.next !== undefined ? { next: page.next } : {}),
      ...(page.partial ? { partial: true } : {}),
    });
  });
  r.get('/v1/jobs/:id', async (req, res) => {
    const id = req.params.id;
    if (!JOB_ID.test(id)) return res.status(400).json({ error: 'not a valid job id' });
    const job = await deps.reader.get(id);
    if (!job) return res.status(404).json({ error: `no job ${id}` });
    return res.json(job);
  });
  return r;
}
