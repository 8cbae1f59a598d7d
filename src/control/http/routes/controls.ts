import { Router, type Response } from 'express';
import { z } from 'zod';
import { RunbookName } from '../../../core/catalogue/jobs.ts';
import { JOB_ID } from '../../../core/catalogue/idempotency-keys.ts';
import { NodeName } from '../../../core/catalogue/names.ts';
import type { JobRetry } from '../../actions/job-retry.ts';
import type { OperatorActions } from '../../actions/operator-actions.ts';
import { BreakerName } from '../../../core/controls/records.ts';
import { describeZodError } from '../../ingest/zod-error.ts';
import { operatorOf } from '../operator-gate.ts';

// The operator's API: modes, pause/resume, breakers, approvals. Parse, hand over, answer
// (a thin edge: no business logic here). Who asks is the operator the gate verified (operator-gate.ts), never a body
// field (a `by` in the body is ignored); they may say why; both are recorded, and each answer
// says who was recorded (`recordedAs`).

const Why = z.string().trim().max(500).optional();

const ModeBody = z
  .object({
    runbook: z.optional(RunbookName),
    node: z.optional(NodeName),
    /** `default`: drop the override, back to configuration. */
    mode: z.enum(['dry-run', 'enforce', 'default']),
    why: Why,
  })
  .refine((b) => (b.runbook === undefined) !== (b.node === undefined), 'name exactly one of runbook or node');
const PauseBody = z
  .object({ node: z.optional(NodeName), runbook: z.optional(RunbookName), why: Why })
  .refine((b) => b.node === undefined || b.runbook === undefined, 'name a node or a runbook, not both (neither: the cluster)');
const scopeOf = (b: { node?: string | undefined; runbook?: string | undefined }) => (b.runbook ? { runbook: b.runbook } : b.node);
const scopeName = (b: { node?: string | undefined; runbook?: string | undefined }) =>
  b.runbook ? `runbook/${b.runbook}` : b.node ? `node/${b.node}` : 'cluster';
const ResetBody = z.object({ breaker: BreakerName, why: Why });
const ApproveBody = z.object({ why: Why });
const RejectBody = z.object({ why: z.string().trim().min(1, 'say why the step must not run (why)').max(500) });
const RetryBody = z.object({ why: z.string().trim().min(1, 'say why the job should run again (why)').max(500) });
const Limit = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) });

const bad = (res: Response, err: z.ZodError) => res.status(400).json({ error: describeZodError(err) });
const asked = (res: Response, b: { why?: string | undefined }) => ({ by: operatorOf(res).username, ...(b.why ? { why: b.why } : {}) });
const recordedAs = (res: Response) => ({ recordedAs: operatorOf(res).username });

export function controlRoutes(ops: OperatorActions, retries?: JobRetry): Router {
  const r = Router();

  r.get('/v1/controls', async (_req, res) => res.json(await ops.view()));
  r.get('/v1/controls/audit', async (req, res) => {
    const q = Limit.safeParse(req.query);
    if (!q.success) return bad(res, q.error);
    // Each entry says whether its writer's seal holds (`verified`); `problems`: lists with entries missing.
    const report = await ops.auditReport(q.data.limit);
    return res.json({ audit: report.entries, problems: report.problems });
  });

  r.post('/v1/modes', async (req, res) => {
    const b = ModeBody.safeParse(req.body ?? {});
    if (!b.success) return bad(res, b.error);
    const scope = b.data.runbook ? { runbook: b.data.runbook } : { node: b.data.node as string };
    await ops.setMode(scope, b.data.mode === 'default' ? null : b.data.mode, asked(res, b.data));
    return res.json({ modes: (await ops.view()).modes, ...recordedAs(res) });
  });

  r.post('/v1/pause', async (req, res) => {
    const b = PauseBody.safeParse(req.body ?? {});
    if (!b.success) return bad(res, b.error);
    const changed = await ops.pause(scopeOf(b.data), asked(res, b.data));
    return res.json({ paused: scopeName(b.data), changed, pauses: (await ops.view()).pauses, ...recordedAs(res) });
  });
  r.post('/v1/resume', async (req, res) => {
    const b = PauseBody.safeParse(req.body ?? {});
    if (!b.success) return bad(res, b.error);
    const { changed, released } = await ops.resume(scopeOf(b.data), asked(res, b.data));
    return res.json({ resumed: scopeName(b.data), changed, released, pauses: (await ops.view()).pauses, ...recordedAs(res) });
  });

  r.get('/v1/breakers', async (_req, res) => res.json({ breakers: await ops.breakerStates() }));
  r.post('/v1/breakers/reset', async (req, res) => {
    const b = ResetBody.safeParse(req.body ?? {});
    if (!b.success) return bad(res, b.error);
    const out = await ops.resetBreaker(b.data.breaker, asked(res, b.data));
    return res.json({ breaker: b.data.breaker, ...out, ...recordedAs(res) });
  });

  r.get('/v1/approvals', async (_req, res) => res.json({ approvals: await ops.pendingApprovals() }));
  r.get('/v1/jobs/:id/approval', async (req, res) => {
    if (!JOB_ID.test(req.params.id)) return res.status(400).json({ error: 'not a valid job id' });
    const rec = await ops.approval(req.params.id);
    return rec ? res.json(rec) : res.status(404).json({ error: `job ${req.params.id} has no approval request` });
  });
  for (const verb of ['approve', 'reject'] as const) {
    r.post(`/v1/jobs/:id/${verb}`, async (req, res) => {
      if (!JOB_ID.test(req.params.id)) return res.status(400).json({ error: 'not a valid job id' });
      const b = (verb === 'approve' ? ApproveBody : RejectBody).safeParse(req.body ?? {});
      if (!b.success) return bad(res, b.error);
      const out = verb === 'approve' ? await ops.approve(req.params.id, asked(res, b.data)) : await ops.reject(req.params.id, asked(res, b.data));
      return out.ok ? res.json(out.approval) : res.status(out.status).json({ error: out.error, ...(out.approval ? { approval: out.approval } : {}) });
    });
  }
  // A failed job again, as a new job sealed afresh (src/control/actions/job-retry.ts says why not BullMQ's retry).
  r.post('/v1/jobs/:id/retry', async (req, res) => {
    if (!JOB_ID.test(req.params.id)) return res.status(400).json({ error: 'not a valid job id' });
    if (!retries) return res.status(503).json({ error: 'retries are not available on this receiver' });
    const b = RetryBody.safeParse(req.body ?? {});
    if (!b.success) return bad(res, b.error);
    const out = await retries.retry(req.params.id, asked(res, b.data));
    return out.ok ? res.status(201).json({ ...out, ...recordedAs(res) }) : res.status(out.status).json({ error: out.error });
  });
  return r;
}
