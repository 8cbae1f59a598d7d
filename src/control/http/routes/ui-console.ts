import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Permission } from '../../auth/permissions.ts';
import { JOB_ID } from '../../../core/catalogue/idempotency-keys.ts';
import { NodeName } from '../../../core/catalogue/names.ts';
import { RunbookName } from '../../../core/catalogue/jobs.ts';
import { loadIncident } from '../../console/incident-detail.ts';
import { IncidentFilter, listIncidents } from '../../console/incident-list.ts';
import type { IndexEntry } from '../../../adapters/jobstore/incident-index.ts';
import { FleetQuery, fleetPage } from '../../console/fleet.ts';
import { stateCounts } from '../../console/state-counts.ts';
import { agentState } from '../../console/agent-state.ts';
import { nodeOfQueue } from '../../../core/catalogue/queues.ts';
import { Breakers } from '../../../adapters/controls/breakers.ts';
import { BreakerName } from '../../../core/controls/records.ts';
import { operatorOf } from '../operator-gate.ts';
import { safeNext, sessionOf } from './ui-auth.ts';
import { filterQuery, incidentsPage } from './ui-incidents-page.ts';
import { fleetPageHtml, fleetQuery } from './ui-fleet-page.ts';
import { CachedRead } from '../../console/cached-read.ts';
import { placeholderList } from '../../console/placeholder-list.ts';
import { jobPage } from './ui-job-page.ts';
import type { ActionName, PageCtx } from './ui-pages.ts';
import type { UiDeps } from './ui-deps.ts';

// The on-call console's routes, behind ui-auth.ts' guard (a session allowed to list
// jobs; writes from our own origin with the session's CSRF token). Pages answer with an ETag of
// what they render, so the script's polls cost a 304 when nothing changed. Every action asks
// SubjectAccessReview for the operator's own verb before anything else (403 whatever the page
// showed), needs a reason, a confirmation for the ones that let destructive steps run, and is
// recorded in the audit trail under the verified user name, through the same OperatorActions as
// the API.

const PAGE_SIZE = 50;

const PERMISSION: Record<ActionName, Permission> = {
  approve: { resource: 'jobs', verb: 'approve' },
  reject: { resource: 'jobs', verb: 'reject' },
  pause: { resource: 'pauses', verb: 'create' },
  resume: { resource: 'pauses', verb: 'delete' },
  reset: { resource: 'breakers', verb: 'reset' },
  retry: { resource: 'jobs', verb: 'retry' },
};

const Why = z.string().trim().min(1, 'give a reason (why)').max(500, 'why: at most 500 characters');
const Confirmed = z.literal('yes', { error: 'confirm first (the checkbox)' });
const Bodies = {
  approve: z.object({ why: Why, confirm: Confirmed }),
  reject: z.object({ why: Why }),
  // A node (no confirmation: it only holds jobs), a runbook everywhere or the whole cluster (confirmed: wide).
  pause: z
    .object({ why: Why, node: z.optional(NodeName), runbook: z.optional(RunbookName), confirm: z.literal('yes').optional() })
    .refine((b) => b.node === undefined || b.runbook === undefined, 'name a node or a runbook, not both')
    .refine((b) => b.node !== undefined || b.confirm === 'yes', { message: 'confirm first (the checkbox)', path: ['confirm'] }),
  resume: z
    .object({ why: Why, node: z.optional(NodeName), runbook: z.optional(RunbookName), confirm: Confirmed })
    .refine((b) => b.node === undefined || b.runbook === undefined, 'name a node or a runbook, not both'),
  reset: z.object({ why: Why, breaker: BreakerName, confirm: Confirmed }),
  retry: z.object({ why: Why, confirm: Confirmed }),
};

/** Query values as strings, empty ones (a form's "any") dropped. */
const given = (q: Request['query']): Record<string, string> =>
  Object.fromEntries(Object.entries(q).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''));

/** What every console page needs: who asks and what they may do, and a sender with ETags. */
interface Pages {
  ctx(res: Response): Promise<PageCtx>;
  send(req: Request, res: Response, html: string): void;
}

function pages(deps: UiDeps): Pages {
  const ctx = async (res: Response): Promise<PageCtx> => {
    const operator = operatorOf(res);
    const names = Object.keys(PERMISSION) as ActionName[];
    const answers = await Promise.all(
      names.map((n) =>
        deps.auth.authorise(operator, PERMISSION[n]).then(
          (a) => a.ok,
          () => false,
        ),
      ),
    );
    return { csrf: sessionOf(res).csrf, username: sessionOf(res).username, can: Object.fromEntries(names.map((n, i) => [n, answers[i]])) };
  };
  /** Sends a page with its ETag; 304 when the poller already has it. */
  const send = (req: Request, res: Response, html: string): void => {
    const etag = `"${createHash('sha256').update(html).digest('base64url').slice(0, 27)}"`;
    res.set({ 'Cache-Control': 'no-store', ETag: etag });
    if (req.get('if-none-match') === etag) {
      res.status(304).end();
      return;
    }
    res.type('html').send(html);
  };

  return { ctx, send };
}

/** GET /ui/ (and /ui/incidents): the incidents, storms grouped, with the counts and the controls that hold jobs back. */
function incidentsRoute(deps: UiDeps, p: Pages, breakers: Breakers) {
  return async (req: Request, res: Response) => {
    // Empty fields of the filter form mean "any".
    const f = IncidentFilter.safeParse(given(req.query));
    if (!f.success)
      return res
        .status(400)
        .type('text')
        .send(`bad filter: ${f.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    // The unfiltered view groups storms (src/control/console/storms.ts): one line each, its jobs left out
    // of the rows; a filter (the storm's own link among them) shows the rows themselves.
    const grouped = f.data.node === undefined && f.data.runbook === undefined && f.data.state === undefined && f.data.mode === undefined;
    const storms = grouped ? (await deps.storms.get().catch(() => undefined))?.value : undefined;
    const inStorm = storms?.length ? (e: IndexEntry) => storms.some((s) => s.members.has(e.member)) : undefined;
    const [page, snap, parked, pauses, tripped, ctx] = await Promise.all([
      listIncidents(deps.incidents, deps.jobs, f.data, { limit: PAGE_SIZE, ...(inStorm ? { exclude: inStorm } : {}) }),
      deps.fleet.get().catch(() => undefined),
      deps.controls.store.parkedJobs().catch(() => undefined),
      deps.controls.store.pauses().catch(() => undefined),
      breakers.tripped().catch(() => undefined),
      p.ctx(res),
    ]);
    const self = filterQuery(f.data);
    const counts = snap ? stateCounts(snap) : undefined;
    const agents = snap ? new Map(snap.queues.map((q) => [q.queue, agentState(q)])) : undefined;
    return p.send(
      req,
      res,
      incidentsPage(
        {
          filter: f.data,
          page,
          self,
          ...(storms?.length && f.data.before === undefined ? { storms } : {}),
          ...(agents
            ? {
                agentOf: (queue: string) => agents.get(queue),
                nodesWithoutAgent: [...agents].filter(([q, a]) => a === 'missing' && nodeOfQueue(q) !== undefined).length,
              }
            : {}),
          ...(counts ? { counts } : {}),
          ...(parked ? { parked } : {}),
          ...(pauses ? { pauses } : {}),
          ...(tripped ? { tripped } : {}),
        },
        ctx,
      ),
    );
  };
}

/** GET /ui/fleet: every node with a queue, a breaker or a pause. */
function fleetRoute(deps: UiDeps, p: Pages, breakers: Breakers) {
  // The page polls: the reports are read at most every 5 s for all its viewers (the API reads them fresh).
  const placeholders = new CachedRead(() => placeholderList(deps.redis, deps.prefix), { ttlMs: 5_000 });
  return async (req: Request, res: Response) => {
    const q = FleetQuery.safeParse(given(req.query));
    if (!q.success)
      return res
        .status(400)
        .type('text')
        .send(`bad query: ${q.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const [snap, parked, pauses, tripped, ctx, attached] = await Promise.all([
      deps.fleet.get(),
      deps.controls.store.parkedJobs().catch(() => undefined),
      deps.controls.store.pauses().catch(() => undefined),
      breakers.tripped().catch(() => undefined),
      p.ctx(res),
      placeholders.get().then(
        (c) => c.value,
        () => undefined,
      ),
    ]);
    const page = fleetPage(snap, { ...(parked ? { parked } : {}), ...(pauses ? { pauses } : {}), ...(tripped ? { tripped } : {}) }, q.data);
    return p.send(req, res, fleetPageHtml(page, fleetQuery(q.data), ctx, attached));
  };
}

/** GET /ui/jobs/:id: one incident in full. */
function jobRoute(deps: UiDeps, p: Pages) {
  return async (req: Request, res: Response) => {
    const id = String(req.params['id']);
    if (!JOB_ID.test(id)) return res.status(400).type('text').send('not a valid job id');
    const [detail, ctx] = await Promise.all([loadIncident(deps, id), p.ctx(res)]);
    if (!detail) return res.status(404).type('text').send(`no job ${id}`);
    return p.send(req, res, jobPage({ ...detail, self: `/ui/jobs/${encodeURIComponent(id)}`, canRetry: deps.retries !== undefined }, ctx));
  };
}

/** The actions (approve, reject, retry, pause, resume, breaker reset), each under the operator's own RBAC verb. */
// long because: one short route per console action, all through the same act() check
function actionRoutes(deps: UiDeps, r: Router): void {
  /** The guard checked origin and CSRF token; here the verb (403 first, whatever the form said), then the body. */
  const act =
    <A extends ActionName>(
      action: A,
      run: (req: Request, body: z.infer<(typeof Bodies)[A]>, by: string) => Promise<{ status: number; error?: string; location?: string }>,
      back: (req: Request) => string,
    ) =>
    async (req: Request, res: Response) => {
      const operator = operatorOf(res);
      const allowed = await deps.auth.authorise(operator, PERMISSION[action]);
      if (!allowed.ok) return res.status(allowed.status).type('text').send(allowed.error);
      const b = Bodies[action].safeParse(req.body ?? {});
      if (!b.success)
        return res
          .status(400)
          .type('text')
          .send(b.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      const out = await run(req, b.data as z.infer<(typeof Bodies)[A]>, operator.username);
      if (out.error) return res.status(out.status).type('text').send(out.error);
      if (out.location) return res.redirect(303, out.location);
      const body = (req.body ?? {}) as Record<string, unknown>;
      return res.redirect(303, safeNext(typeof body['back'] === 'string' ? body['back'] : back(req)));
    };

  const jobBack = (req: Request) => `/ui/jobs/${encodeURIComponent(String(req.params['id']))}`;
  const validId = (req: Request, res: Response, next: () => void) =>
    JOB_ID.test(String(req.params['id'])) ? next() : res.status(400).type('text').send('not a valid job id');
  for (const verb of ['approve', 'reject'] as const) {
    r.post(
      `/ui/jobs/:id/${verb}`,
      validId,
      act(
        verb,
        async (req, b, by) => {
          const id = String(req.params['id']);
          const out = verb === 'approve' ? await deps.controls.approve(id, { by, why: b.why }) : await deps.controls.reject(id, { by, why: b.why });
          return out.ok ? { status: 200 } : { status: out.status, error: out.error };
        },
        jobBack,
      ),
    );
  }
  // The new job's page: it runs there, live (a new job sealed afresh: src/control/actions/job-retry.ts).
  r.post(
    '/ui/jobs/:id/retry',
    validId,
    act(
      'retry',
      async (req, b, by) => {
        if (!deps.retries) return { status: 503, error: 'retries are not available on this receiver' };
        const out = await deps.retries.retry(String(req.params['id']), { by, why: b.why });
        return out.ok ? { status: 303, location: `/ui/jobs/${encodeURIComponent(out.id)}` } : { status: out.status, error: out.error };
      },
      jobBack,
    ),
  );
  r.post(
    '/ui/pause',
    act(
      'pause',
      async (_req, b, by) => {
        await deps.controls.pause(b.runbook ? { runbook: b.runbook } : b.node, { by, why: b.why });
        return { status: 200 };
      },
      () => '/ui/',
    ),
  );
  r.post(
    '/ui/resume',
    act(
      'resume',
      async (_req, b, by) => {
        await deps.controls.resume(b.runbook ? { runbook: b.runbook } : b.node, { by, why: b.why });
        return { status: 200 };
      },
      () => '/ui/',
    ),
  );
  r.post(
    '/ui/breakers/reset',
    act(
      'reset',
      async (_req, b, by) => {
        await deps.controls.resetBreaker(b.breaker, { by, why: b.why });
        return { status: 200 };
      },
      () => '/ui/',
    ),
  );
}

export function consoleRoutes(deps: UiDeps): Router {
  const r = Router();
  const breakers = new Breakers(deps.redis, deps.prefix);
  const p = pages(deps);
  r.get(['/ui', '/ui/', '/ui/incidents'], incidentsRoute(deps, p, breakers));
  r.get('/ui/fleet', fleetRoute(deps, p, breakers));
  r.get('/ui/jobs/:id', jobRoute(deps, p));
  actionRoutes(deps, r);
  return r;
}
