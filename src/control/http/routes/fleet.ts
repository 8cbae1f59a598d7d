import { Router } from 'express';
import { FleetQuery, fleetPage } from '../../console/fleet.ts';
import type { FleetSnapshots } from '../../console/fleet-snapshot.ts';
import { stateCounts } from '../../console/state-counts.ts';
import type { Breakers } from '../../../adapters/controls/breakers.ts';
import type { ControlsStore } from '../../../adapters/controls/controls-store.ts';
import { describeZodError } from '../../ingest/zod-error.ts';

// The console's overviews as JSON, for the CLI and scripts, from the same fleet
// snapshot as the pages (one scan of every queue shared for two seconds):
// - GET /v1/fleet: a page of nodes, sorted on the server (?sort=&dir=&show=open|all&offset=&limit=);
// - GET /v1/summary: jobs by state and what the incidents view's banners say (pauses, tripped
//   breakers, parked jobs by reason, the approvals waiting longest).

const APPROVALS_SHOWN = 20;

export interface FleetRouteDeps {
  fleet: FleetSnapshots;
  store: ControlsStore;
  breakers: Breakers;
}

export function fleetRoutes(d: FleetRouteDeps): Router {
  const r = Router();
  const controls = async () => {
    const [parked, pauses, tripped] = await Promise.all([d.store.parkedJobs(), d.store.pauses(), d.breakers.tripped()]);
    return { parked, pauses, tripped };
  };
  r.get('/v1/fleet', async (req, res) => {
    const q = FleetQuery.safeParse(req.query);
    if (!q.success) return res.status(400).json({ error: describeZodError(q.error) });
    const [snap, c] = await Promise.all([d.fleet.get(), controls()]);
    return res.json(fleetPage(snap, c, q.data));
  });
  r.get('/v1/summary', async (_req, res) => {
    const [snap, c] = await Promise.all([d.fleet.get(), controls()]);
    const byReason: Record<string, number> = {};
    for (const p of c.parked) byReason[p.reason] = (byReason[p.reason] ?? 0) + 1;
    const approvals = c.parked.filter((p) => p.reason === 'approval');
    return res.json({
      ...stateCounts(snap),
      snapshotAt: new Date(snap.at).toISOString(),
      parked: byReason,
      approvalsWaiting: approvals.length,
      longestWaiting: approvals.slice(0, APPROVALS_SHOWN),
      pauses: c.pauses,
      tripped: c.tripped,
    });
  });
  return r;
}
