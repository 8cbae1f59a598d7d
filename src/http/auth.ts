import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';

// Bearer-token check for the webhook and API routes. Tokens are hashed once; each request's
// token is hashed and compared in constant time against every configured token, so neither the
// content nor the length of a token leaks through timing.

const digest = (v: string): Buffer => createHash('sha256').update(v, 'utf8').digest();

export function bearerAuth(tokens: readonly string[], onDenied: (req: Parameters<RequestHandler>[0]) => void): RequestHandler {
  const expected = tokens.map(digest);
  return (req, res, next) => {
    if (expected.length === 0) return next();
    const header = req.get('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const given = digest(m?.[1] ?? '');
    let ok = false;
    for (const e of expected) ok = timingSafeEqual(e, given) || ok;
    if (ok && m) return next();
    onDenied(req);
    res.set('WWW-Authenticate', 'Bearer realm="volume-medic"').status(401).json({ error: 'missing or invalid bearer token' });
  };
}
