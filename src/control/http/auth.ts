import type { Request, RequestHandler } from 'express';
import type { FailedAuthLimiter } from '../auth/failed-auth-limiter.ts';
import { bearerOf } from '../auth/operator-auth.ts';
import { tokenMatcher } from '../auth/token-match.ts';

// The webhook routes' bearer-token check (VOLUME_MEDIC_TOKEN: what Alertmanager, the event
// exporter and NPD hold). It opens the webhook routes and nothing else (operator routes:
// operator-gate.ts). No token configured (ALLOW_UNAUTHENTICATED): open. A failed attempt spends
// the address's failed-auth budget; an address out of it gets 429 before its token is looked at.

export function bearerAuth(tokens: readonly string[], limiter: FailedAuthLimiter, onDenied: (req: Request) => void): RequestHandler {
  const matches = tokenMatcher(tokens);
  const open = tokens.length === 0;
  return (req, res, next) => {
    if (open) return next();
    const wait = limiter.retryAfter(req.ip ?? '');
    if (wait !== undefined) {
      onDenied(req);
      return res
        .set('Retry-After', String(wait))
        .status(429)
        .json({ error: `too many failed authentication attempts from this address; retry in ${wait} s` });
    }
    const token = bearerOf(req.get('authorization'));
    if (token !== undefined && matches(token)) return next();
    limiter.failed(req.ip ?? '');
    onDenied(req);
    return res
      .set('WWW-Authenticate', 'Bearer realm="volume-medic"')
      .status(401)
      .json({ error: 'missing or invalid bearer token (the webhook routes take VOLUME_MEDIC_TOKEN)' });
  };
}
