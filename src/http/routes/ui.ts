import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Job, Queue } from 'bullmq';
import { Router, type Response } from 'express';
import { z } from 'zod';
import type { OperatorAuth } from '../../auth/operator-auth.ts';
import type { SessionStore } from '../../auth/session-store.ts';
import type { RedisConnection } from '../../queues/redis.ts';
import { RemediationJob, jobNode } from '../../catalogue/jobs.ts';
import { JOB_ID } from '../../catalogue/keys.ts';
import { nodeOfQueue } from '../../catalogue/queues.ts';
import type { OperatorActions } from '../../controls/operator-actions.ts';
import { controlsSummary } from '../../controls/status.ts';
import { knownQueuesKey } from '../../queues/known-queues.ts';
import { operatorOf } from '../operator-gate.ts';
import { sessionOf, uiAuth } from './ui-auth.ts';
import { STYLE, incidentsPage, jobPage, type Incident, type IncidentStep } from './ui-pages.ts';

// The dashboard under /ui, for operators signed in as ui-auth.ts says:
// - /ui/queues/: bull-board over every queue the receiver has used (node queues appear as
//   nodes get their first job), always read-only: its own write API (add, retry, promote,
//   clean, obliterate) takes arbitrary job data, so it is refused whatever its buttons show;
// - /ui/: recent incidents by node with plan and outcome; /ui/jobs/:id one job in full, with
//   Approve/Reject for a job that waits, which go through the operator actions with the
//   operator's own RBAC verb (SubjectAccessReview), as the API's.

export interface UiDeps {
  redis: RedisConnection;
  prefix: string;
  auth: OperatorAuth;
  sessions: SessionStore;
  queue: (name: string) => Queue;
  controls: OperatorActions;
}

export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "font-src 'self'", "connect-src 'self'",
  "form-action 'self'", "frame-ancestors 'none'", "base-uri 'self'",
].join('; ');

export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': UI_CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const Decision = z.object({ why: z.string().trim().max(500).optional() });

const BOARD_PATH = '/ui/queues';
const STATES = ['active', 'waiting', 'delayed', 'paused', 'prioritized', 'failed', 'completed'] as const;

export function uiRoutes(deps: UiDeps): Router {
  const r = Router();
  // Every /ui answer, sign-in page and bull-board included: our own origin only (bull-board's
  // Google Fonts link is blocked on purpose: the dashboard reaches nothing outside, and falls
  // back to the system's fonts), no framing, no MIME sniffing, no Referer leaving the page.
  r.use('/ui', (_req, res, next) => {
    res.set(UI_SECURITY_HEADERS);
    next();
  });
  const auth = uiAuth({ auth: deps.auth, sessions: deps.sessions });
  // Not a secret, and the sign-in page needs it before any session.
  r.get('/ui/style.css', (_req, res) => res.set('Cache-Control', 'max-age=3600').type('css').send(STYLE));
  r.use(auth.routes);
  r.use('/ui', auth.guard);

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  // @bull-board/express pins its own @bull-board/api (9.10.1 beside our 9.10.2): same shape,
  // separately declared types. Pinning @bull-board/api to the express adapter's version dedupes it.
  const board = createBullBoard({ queues: [], serverAdapter, options: { uiConfig: { boardTitle: 'volume-medic' } } });
  let shown = '';
  let checkedAt = 0;
  const refreshQueues = async (): Promise<void> => {
    if (Date.now() - checkedAt < 2_000) return;
    checkedAt = Date.now();
    const names = (await deps.redis.smembers(knownQueuesKey(deps.prefix))).sort();
    if (names.join('\n') === shown) return;
    shown = names.join('\n');
    board.replaceQueues(names.map((n) => new BullMQAdapter(deps.queue(n), { readOnlyMode: true, allowRetries: false })));
  };
  r.use(BOARD_PATH, async (req, res, next) => {
    // Read-only means read-only, whatever the board's own buttons do.
    if (req.method !== 'GET' && req.method !== 'HEAD') return res.status(405).json({ error: 'the queue board is read-only; decide on waiting jobs on their /ui/jobs/<id> page or with the CLI' });
    try {
      await refreshQueues();
    } catch {
      // Redis away: the board shows what it had.
    }
    return next();
  }, serverAdapter.getRouter());

  r.get(['/ui', '/ui/', '/ui/incidents'], async (_req, res) => {
    const [incidents, controls] = await Promise.all([recentIncidents(deps, 200), controlsSummary(deps.redis, deps.prefix).catch(() => undefined)]);
    res.set('Cache-Control', 'no-store').type('html').send(incidentsPage(incidents, controls, pageCtx(res)));
  });
  r.get('/ui/jobs/:id', async (req, res) => {
    const id = req.params.id;
    if (!JOB_ID.test(id)) return res.status(400).type('text').send('not a valid job id');
    for (const name of (await deps.redis.smembers(knownQueuesKey(deps.prefix))).sort()) {
      const q = deps.queue(name);
      const job = await q.getJob(id);
      if (!job) continue;
      const [state, logs, approval] = await Promise.all([job.getState(), q.getJobLogs(id, 0, 199), deps.controls.approval(id)]);
      const incident = { ...toIncident(job, name, state), log: logs.logs };
      return res.set('Cache-Control', 'no-store').type('html').send(jobPage(incident, approval && approval.jobCreatedAt === job.timestamp ? approval : undefined, pageCtx(res)));
    }
    return res.status(404).type('text').send(`no job ${id}`);
  });
  // The guard checked origin and CSRF token; the verb is the operator's own, as on the API.
  for (const verb of ['approve', 'reject'] as const) {
    r.post(`/ui/jobs/:id/${verb}`, async (req, res) => {
      const id = req.params.id;
      if (!JOB_ID.test(id)) return res.status(400).type('text').send('not a valid job id');
      const b = Decision.safeParse(req.body ?? {});
      if (!b.success) return res.status(400).type('text').send('why: at most 500 characters');
      if (verb === 'reject' && !b.data.why) return res.status(400).type('text').send('say why the step must not run (why)');
      const operator = operatorOf(res);
      const allowed = await deps.auth.authorise(operator, { resource: 'jobs', verb });
      if (!allowed.ok) return res.status(allowed.status).type('text').send(allowed.error);
      const asked = { by: operator.username, ...(b.data.why ? { why: b.data.why } : {}) };
      const out = verb === 'approve' ? await deps.controls.approve(id, asked) : await deps.controls.reject(id, asked);
      if (!out.ok) return res.status(out.status).type('text').send(out.error);
      return res.redirect(303, `/ui/jobs/${encodeURIComponent(id)}`);
    });
  }
  return r;
}

const pageCtx = (res: Response) => ({ csrf: sessionOf(res).csrf, username: sessionOf(res).username });

async function recentIncidents(deps: UiDeps, limit: number): Promise<Incident[]> {
  const out: Incident[] = [];
  for (const name of (await deps.redis.smembers(knownQueuesKey(deps.prefix))).sort()) {
    const q = deps.queue(name);
    for (const state of STATES) {
      for (const job of await q.getJobs([state], 0, limit - 1, false)) {
        if (job) out.push(toIncident(job, name, state));
      }
    }
  }
  return out.sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit);
}

type Loose = Record<string, unknown> | undefined;
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function toIncident(job: Job, queue: string, state: string): Incident {
  const parsed = RemediationJob.safeParse(job.data);
  const progress = obj(job.progress);
  const parked = obj(progress?.['parked']);
  const result = obj(job.returnvalue) ?? obj(progress?.['result']);
  const done = Array.isArray(result?.['steps']) ? (result['steps'] as IncidentStep[]) : [];
  // A parked job shows its whole plan: steps done so far with their status, the rest as planned.
  const plannedSteps = Array.isArray(obj(parked?.['plan'])?.['steps']) ? (obj(parked?.['plan'])?.['steps'] as IncidentStep[]) : [];
  const planFromResult = Array.isArray(obj(result?.['plan'])?.['steps']) ? (obj(result?.['plan'])?.['steps'] as IncidentStep[]) : [];
  const all = plannedSteps.length ? plannedSteps : planFromResult;
  const steps = all.length ? all.map((s) => done.find((d) => d.id === s.id) ?? { ...s, status: 'planned' }) : done;
  const waiting = state === 'delayed' && parked ? { reason: str(parked['reason']) ?? '?', why: str(parked['why']) ?? '', ...(str(parked['since']) ? { since: str(parked['since']) as string } : {}) } : undefined;
  return {
    id: job.id ?? '',
    queue,
    node: (parsed.success ? jobNode(parsed.data) : undefined) ?? nodeOfQueue(queue) ?? '(cluster)',
    runbook: parsed.success ? parsed.data.runbook : job.name,
    state,
    createdAt: new Date(job.timestamp).toISOString(),
    ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
    attemptsMade: job.attemptsMade,
    ...(str(result?.['mode']) ? { mode: str(result?.['mode']) as string } : {}),
    ...(str(result?.['modeWhy']) ? { modeWhy: str(result?.['modeWhy']) as string } : {}),
    ...(str(result?.['outcome']) ? { outcome: str(result?.['outcome']) as string } : {}),
    ...(str(result?.['summary']) ? { summary: str(result?.['summary']) as string } : {}),
    ...(job.failedReason ? { failedReason: job.failedReason } : {}),
    refusals: Array.isArray(result?.['refusals']) ? (result['refusals'] as unknown[]).map(String) : [],
    steps,
    ...(waiting ? { waiting } : {}),
  };
}
