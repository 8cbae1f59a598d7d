import type { Request, RequestHandler, Response } from 'express';
import type { AuthAnswer, Asking, OperatorAuth } from '../auth/operator-auth.ts';
import type { Operator } from '../auth/operator.ts';
import { permissionFor } from '../auth/permissions.ts';

// The gate in front of every /v1 route that is not a webhook: the route's permission from the
// table in src/control/auth/permissions.ts (no entry: 404, so an unlisted route is unreachable), then
// who asks and whether RBAC lets them (src/control/auth/operator-auth.ts). The verified operator is left
// in res.locals for the route: it is who the audit trail records.

export const asking = (req: Request): Asking => ({
  peer: req.socket.remoteAddress,
  client: req.ip ?? req.socket.remoteAddress ?? '',
  header: (n) => req.get(n),
});

function answerDenied(res: Response, a: Extract<AuthAnswer, { ok: false }>): void {
  if (a.retryAfter !== undefined) res.set('Retry-After', String(a.retryAfter));
  if (a.status === 401) res.set('WWW-Authenticate', 'Bearer realm="volume-medic"');
  res.status(a.status).json({ error: a.error });
}

export function operatorGate(auth: OperatorAuth): RequestHandler {
  return async (req, res, next) => {
    const permission = permissionFor(req.method, `${req.baseUrl}${req.path}`);
    if (!permission) return res.status(404).json({ error: 'no such route' });
    const a = await auth.check(asking(req), permission);
    if (!a.ok) return answerDenied(res, a);
    res.locals['operator'] = a.operator;
    return next();
  };
}

/** The verified operator of a request that passed the gate. */
export function operatorOf(res: Response): Operator {
  const op = res.locals['operator'] as Operator | undefined;
  // A route reached without the gate is a wiring bug: refuse rather than record nobody.
  if (!op) throw new Error('operator route reached without the operator gate');
  return op;
}
