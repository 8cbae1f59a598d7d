import { Router } from 'express';
import { z } from 'zod';
import { NodeName } from '../../../core/catalogue/names.ts';
import type { NodeRestriction } from '../../../core/redis-budget/restriction.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import { operatorOf } from '../operator-gate.ts';

// The nodes restricted for going over their Redis memory budget (src/control/fleet/
// node-redis-budget.ts), and an operator's release of one. A restriction is lifted only here:
// not by time, not by the node enrolling again, not by its Node being deleted and made again
// (root on a node can do all three). Release after finding why the node wrote that much; a node
// that goes over its budget again is restricted again at the next count.

const ReleaseBody = z.object({
  node: NodeName,
  why: z.string().trim().min(1, 'say why the node may write again (why)').max(500),
});

export interface RedisBudgetPort {
  restricted(): Promise<Map<string, NodeRestriction>>;
  release(node: string, asked: { by: string; why: string }): Promise<NodeRestriction | undefined>;
}

export function redisBudgetRoutes(budget: RedisBudgetPort, budgetBytes: number): Router {
  const r = Router();
  r.get('/v1/redis-budget', async (_req, res) => {
    const nodes = [...(await budget.restricted())].map(([node, rec]) => ({ node, ...rec })).sort((a, b) => (a.node < b.node ? -1 : 1));
    res.json({ budgetBytes, restricted: nodes });
  });
  r.post('/v1/redis-budget/release', async (req, res) => {
    const b = ReleaseBody.safeParse(req.body ?? {});
    if (!b.success) return res.status(400).json({ error: describeZodError(b.error) });
    const by = operatorOf(res).username;
    const was = await budget.release(b.data.node, { by, why: b.data.why });
    return res.json({ node: b.data.node, ...(was ? { released: was } : { released: null, note: 'the node was not restricted' }), recordedAs: by });
  });
  return r;
}
