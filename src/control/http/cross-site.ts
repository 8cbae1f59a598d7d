import type { Request, RequestHandler } from 'express';

// Cross-site writes. A page on another site can make a browser send a "simple" POST without a
// CORS preflight: a form (text/plain, urlencoded, multipart) or a no-cors fetch. With a trusted
// auth proxy's session cookie, or OPERATOR_AUTH=insecure, or an open webhook route, that POST
// would act under whoever is signed in. Browsers mark every such request: Origin on every
// cross-origin POST, Sec-Fetch-Site on current ones; the page cannot remove either. Senders that
// are not browsers (Alertmanager, the event exporter, the CLI, curl) send neither.

/** Our own origin, as the browser sees it (behind a trusted proxy: its scheme and host). */
const ownOrigin = (req: Request): string => `${req.protocol}://${req.host}`;

export const isRead = (req: Request): boolean => req.method === 'GET' || req.method === 'HEAD';

/**
 * Why the browser's own marks say this request came from another site; undefined when they say
 * it is ours, or when there are none (not a browser). `Origin: null` (a sandboxed or data:
 * document, or our own pages under Referrer-Policy: no-referrer) defers to Sec-Fetch-Site.
 */
export function markedCrossSite(req: Request): string | undefined {
  const origin = req.get('origin');
  const site = req.get('sec-fetch-site');
  if (origin !== undefined && origin !== 'null') return origin === ownOrigin(req) ? undefined : `cross-origin request refused (Origin ${origin.slice(0, 100)})`;
  if (site !== undefined) return site === 'same-origin' ? undefined : `cross-site request refused (Sec-Fetch-Site ${site.slice(0, 30)})`;
  if (origin === 'null') return 'cross-site request refused (Origin null without Sec-Fetch-Site)';
  return undefined;
}

/** application/json or a +json type, with any parameters (charset). */
const isJson = (contentType: string): boolean => {
  const t = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
};

export interface WriteGuardOptions {
  /**
   * A body without any Content-Type is let through (the webhook routes: some senders name none,
   * and a 4xx would make them drop the alert). Otherwise a request with a body must say JSON.
   */
  allowUntyped?: boolean;
}

/**
 * In front of every state-changing /v1 route, before authentication (so it holds whatever the
 * operator-auth mode): 403 for a request a browser marks as cross-site, 415 for a body that is
 * not JSON. Reads pass (a CORS preflight is refused like a write: this API answers no CORS).
 */
export function refuseCrossSiteWrites(o: WriteGuardOptions = {}): RequestHandler {
  return (req, res, next) => {
    if (isRead(req)) return next();
    const cross = markedCrossSite(req);
    if (cross) return res.status(403).json({ error: cross });
    const type = req.get('content-type');
    const hasBody = req.get('transfer-encoding') !== undefined || Number(req.get('content-length') ?? 0) > 0;
    if (type !== undefined ? !isJson(type) : hasBody && !o.allowUntyped) {
      return res.status(415).json({ error: `a request body here must be JSON (Content-Type: application/json), not ${type ? type.slice(0, 60) : 'untyped'}` });
    }
    return next();
  };
}
