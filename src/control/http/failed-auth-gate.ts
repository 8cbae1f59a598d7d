import type { RequestHandler, Response } from 'express';
import type { FailedAuthLimiter } from '../auth/failed-auth-limiter.ts';

// For routes whose refusals spend the failed-auth budget (enrolment, agents' breaker asks): an
// address out of it gets 429 and Retry-After before its body is read. The routes check again, in
// the same tick as they spend (FailedAuthLimiter.charge, or a check that nothing awaits before
// `failed`), so that concurrent requests of one address, all past this gate while their bodies
// were read, cannot outrun the budget.

/** The 429 answer; `what`: the attempts, plural ("enrolments"). */
export const tooManyFailures = (res: Response, wait: number, what: string): Response =>
  res
    .set('Retry-After', String(wait))
    .status(429)
    .json({ error: `too many failed ${what} from this address; retry in ${wait} s` });

export function failedAuthGate(limiter: FailedAuthLimiter, what: string): RequestHandler {
  return (req, res, next) => {
    const wait = limiter.retryAfter(req.ip ?? '');
    if (wait === undefined) return next();
    return tooManyFailures(res, wait, what);
  };
}
