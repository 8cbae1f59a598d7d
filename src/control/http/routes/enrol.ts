import { Router, type RequestHandler } from 'express';
import type { Counter } from 'prom-client';
import { ReviewUnavailableError } from '../../auth/access-reviews.ts';
import { bearerOf } from '../../auth/operator-auth.ts';
import type { FailedAuthLimiter } from '../../auth/failed-auth-limiter.ts';
import type { Enrolment } from '../../enrolment/enrolment.ts';
import { LogSummary } from '../../../adapters/observability/log-summary.ts';
import type { Logger } from '../../../adapters/observability/logger.ts';
import { ENROL_PATH, EnrolRequest } from '../../../core/trust/enrolment-wire.ts';
import { failedAuthGate, tooManyFailures } from '../failed-auth-gate.ts';

// POST /v1/enrol: a node agent or the cluster worker trades its projected service-account token
// for the work keys of its own queue (src/control/enrolment). Not an operator route: the token is the
// pod's, checked by TokenReview, and the answer is only ever about that pod's own queue. The
// answer holds keys: never cached, never logged.
//
// Every refusal (401 and 403: any pod's own token gets a TokenReview and a 403) spends the
// address's failed-auth budget; an address out of it gets 429 and no TokenReview. The budget is
// spent before the review and given back when the pod is answered (or the API server could not
// be asked), so concurrent refusals from one address cannot all pass the check before the first
// is counted. Refusals, and requests the API server could not answer, are logged once per
// interval with a count.

export interface EnrolDeps {
  enrolment: Enrolment | undefined;
  limiter: FailedAuthLimiter;
  counter: Counter<'as' | 'outcome'>;
  log: Logger;
}

export function enrolRoutes(d: EnrolDeps, before: RequestHandler[]): Router {
  const r = Router();
  const refusals = new LogSummary(d.log, 'enrolment refused');
  const unanswered = new LogSummary(d.log, 'enrolment could not be answered');
  r.post(ENROL_PATH, failedAuthGate(d.limiter, 'enrolments'), ...before, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const e = d.enrolment;
    if (!e) return res.status(404).json({ error: 'enrolment is off on this receiver (ENROL_NODE_AGENTS / ENROL_CLUSTER_WORKERS unset)' });
    const body = EnrolRequest.safeParse(req.body);
    const as = body.success ? body.data.as : 'invalid';
    if (!body.success) {
      d.counter.inc({ as, outcome: 'invalid' });
      return res.status(400).json({ error: `enrolment request: ${body.error.issues[0]?.message ?? 'invalid'}` });
    }
    const ip = req.ip ?? '';
    const wait = d.limiter.charge(ip);
    if (wait !== undefined) return tooManyFailures(res, wait, 'enrolments');
    const token = bearerOf(req.get('authorization'));
    if (token === undefined) {
      d.counter.inc({ as, outcome: 'unauthorized' });
      return res
        .set('WWW-Authenticate', 'Bearer realm="volume-medic"')
        .status(401)
        .json({ error: "enrolment needs the pod's projected service-account token as a bearer token" });
    }
    try {
      const out = await e.enrol(token, body.data);
      if (!out.ok) {
        if (out.status === 503) d.limiter.forgive(ip);
        d.counter.inc({ as, outcome: out.status === 401 ? 'unauthorized' : out.status === 403 ? 'forbidden' : 'unavailable' });
        refusals.warn({ as, node: body.data.node, status: out.status, error: out.error, from: req.ip });
        return res.status(out.status).json({ error: out.error });
      }
      d.limiter.forgive(ip);
      d.counter.inc({ as, outcome: 'enrolled' });
      d.log.debug({ as, node: body.data.node, pod: out.identity.pod, queue: out.answer.queue }, 'enrolled');
      return res.status(200).json(out.answer);
    } catch (err) {
      d.limiter.forgive(ip);
      d.counter.inc({ as, outcome: 'unavailable' });
      const why = err instanceof ReviewUnavailableError ? err.message : `enrolment failed: ${(err as Error).message.slice(0, 200)}`;
      unanswered.warn({ as, node: body.data.node, err: why });
      return res.set('Retry-After', '5').status(503).json({ error: why });
    }
  });
  return r;
}
