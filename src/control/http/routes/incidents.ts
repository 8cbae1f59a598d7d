import { Router } from 'express';
import { JOB_ID } from '../../../core/catalogue/idempotency-keys.ts';
import { loadIncident, type DetailDeps } from '../../console/incident-detail.ts';

// One incident as the console's page shows it (src/control/console/incident-detail.ts), as JSON: what the
// CLI's `show` prints, so the terminal and the browser show the same evidence, planned argv,
// output and audit trail.

export function incidentRoutes(deps: DetailDeps): Router {
  const r = Router();
  r.get('/v1/jobs/:id/incident', async (req, res) => {
    if (!JOB_ID.test(req.params.id)) return res.status(400).json({ error: 'not a valid job id' });
    const detail = await loadIncident(deps, req.params.id);
    return detail ? res.json(detail) : res.status(404).json({ error: `no job ${req.params.id}` });
  });
  return r;
}
