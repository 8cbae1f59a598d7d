import { Router } from 'express';
import { z } from 'zod';
import { RunbookName } from '../../catalogue/jobs.ts';
import { NodeName } from '../../catalogue/names.ts';
import { JOB_ID } from '../../catalogue/keys.ts';
import { JOB_STATES, type JobReader } from '../../queues/job-reader.ts';
import { describeZodError } from '../../ingest/zod-error.ts';

const ListQuery = z.object({
  node: NodeName.optional(),
  runbook: RunbookName.optional(),
  state: z.enum(JOB_STATES).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export function jobRoutes(reader: JobReader): Router {
  const r = Router();
  r.get('/v1/jobs', async (req, res) => {
    const q = ListQuery.safeParse(req.query);
    if (!q.success) return res.status(400).json({ error: describeZodError(q.error) });
    return res.json({ jobs: await reader.list(q.data) });
  });
  r.get('/v1/jobs/:id', async (req, res) => {
    const id = req.params.id;
    if (!JOB_ID.test(id)) return res.status(400).json({ error: 'not a valid job id' });
    const job = await reader.get(id);
    if (!job) return res.status(404).json({ error: `no job ${id}` });
    return res.json(job);
  });
  return r;
}
