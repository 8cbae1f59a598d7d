import { Router } from 'express';
import { z } from 'zod';
import { isNodeName } from '../../../core/catalogue/names.ts';
import type { NodeRevocation } from '../../enrolment/node-revocation.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import { operatorOf } from '../operator-gate.ts';

// POST /v1/nodes/:node/revoke (`revoke nodes.volume-medic.io`): an operator revokes a node's
// credentials (src/control/enrolment/node-revocation.ts). Recorded under the verified operator,
// with why; idempotent (a repeat before the node enrolled again raises nothing). Without
// enrolment of node agents there is nothing to revoke: agents then hold the roots.

const RevokeBody = z.object({ why: z.string().trim().max(500).optional() });

export function nodeCredentialRoutes(revocation: NodeRevocation | undefined): Router {
  const r = Router();
  r.post('/v1/nodes/:node/revoke', async (req, res) => {
    if (!isNodeName(req.params.node)) return res.status(400).json({ error: 'not a node name (RFC 1123 subdomain)' });
    const b = RevokeBody.safeParse(req.body ?? {});
    if (!b.success) return res.status(400).json({ error: describeZodError(b.error) });
    if (!revocation)
      return res.status(404).json({ error: 'this receiver enrols no node agents (ENROL_NODE_AGENTS): their keys are roots, not revocable per node' });
    const by = operatorOf(res).username;
    const out = await revocation.revoke(req.params.node, { by, ...(b.data.why ? { why: b.data.why } : {}) });
    return res.json({ ...out, recordedAs: by });
  });
  return r;
}
