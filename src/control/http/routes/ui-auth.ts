import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import type { AuthAnswer, OperatorAuth } from '../../auth/operator-auth.ts';
import type { Permission } from '../../auth/permissions.ts';
import { csrfMatches, operatorOfSession, type SessionStore, type UiSession } from '../../auth/session-store.ts';
import { asking } from '../operator-gate.ts';
import { isRead, markedCrossSite } from '../cross-site.ts';
import { esc } from './ui-pages.ts';

// Who may see the dashboard, and how a browser proves it (a browser cannot send a bearer header):
// - sign-in with a Kubernetes token (TokenReview, as the API) through a form, or, behind a
//   configured auth proxy, by the proxy's identity headers; either way the operator must be
//   allowed `list jobs.volume-medic.io` (SubjectAccessReview), checked again on every request;
// - a server-side session (session-store.ts): the cookie holds only a random id, HttpOnly,
//   SameSite=Strict, Path=/ui, Secure when the request came over https (X-Forwarded-Proto only
//   from TRUSTED_PROXY_CIDRS); logging out deletes the session;
// - every request that is not GET/HEAD must come from our own origin (Origin, else
//   Sec-Fetch-Site; neither: refused) and carry the session's CSRF token (form field `_csrf` or
//   header X-CSRF-Token); the sign-in form has no session yet, so it gets the origin check only.
// Tokens never go in URLs.

const UI_COOKIE = 'vm_ui';
const CSRF_FIELD = '_csrf';
const CSRF_HEADER = 'x-csrf-token';
/** What seeing the dashboard takes. */
const DASHBOARD_PERMISSION: Permission = { resource: 'jobs', verb: 'list' };

/** The cookie's value; undefined when absent or not valid percent-encoding (a bad cookie is no session, never a 500). */
function cookieValue(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) {
      try {
        return decodeURIComponent(part.slice(i + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Only our own pages are followed after a sign-in or an action (no open redirect). */
export const safeNext = (v: unknown): string => (typeof v === 'string' && /^\/ui(\/[A-Za-z0-9._~%/?&=-]*)?$/.test(v) && !v.includes('//') ? v : '/ui/');

const PAGE_HEADERS = { 'Cache-Control': 'no-store' };

function onward(res: Response, to: string): void {
  res
    .set(PAGE_HEADERS)
    .type('html')
    .send(
      `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${esc(to)}"><title>volume-medic</title><a href="${esc(to)}">continue</a>`,
    );
}

function loginPage(res: Response, next: string, status: number, note = '', insecure = false): void {
  res
    .status(status)
    .set(PAGE_HEADERS)
    .type('html')
    .send(`<!doctype html>
<html><head><meta charset="utf-8"><title>volume-medic: sign in</title><link rel="stylesheet" href="/ui/style.css"></head>
<body class="login"><h1>volume-medic</h1>${note ? `<p role="alert">${esc(note)}</p>` : ''}
<form method="post" action="/ui/login"><label>Kubernetes token <input type="password" name="token" autocomplete="off" autofocus></label>
<input type="hidden" name="next" value="${esc(next)}"><button type="submit">Sign in</button></form>
<p><small>${insecure ? 'OPERATOR_AUTH=insecure: any token, or none, signs in.' : 'A token of your Kubernetes user, e.g. <code>kubectl create token &lt;service-account&gt;</code>; what you may do is what cluster RBAC grants on volume-medic.io.'}</small></p></body></html>`);
}

/**
 * Refusal reason when a state-changing request may come from another site; undefined when it is
 * ours. Stricter than the API's guard (src/control/http/cross-site.ts): the dashboard is only ever used
 * from a browser, so a request without Origin or Sec-Fetch-Site is refused too. Our own form
 * posts carry `Origin: null` (our pages are served with Referrer-Policy: no-referrer) and
 * Sec-Fetch-Site: same-origin.
 */
function crossSiteReason(req: Request): string | undefined {
  const origin = req.get('origin');
  if ((origin === undefined || origin === 'null') && req.get('sec-fetch-site') === undefined)
    return 'request refused: neither Origin nor Sec-Fetch-Site says it came from this dashboard';
  return markedCrossSite(req);
}

const wantsHtml = (req: Request): boolean => isRead(req) && req.accepts(['html', 'json']) === 'html';

export interface UiAuth {
  /** /ui/login, /ui/logout (before the guard). */
  routes: Router;
  /** Guards everything else under /ui; leaves the session in res.locals (uiSession, operator). */
  guard: RequestHandler;
}

export interface UiAuthDeps {
  auth: OperatorAuth;
  sessions: SessionStore;
}

export const sessionOf = (res: Response): UiSession => res.locals['uiSession'] as UiSession;

// long because: sign-in, sign-out and the guard share one session store and one cross-site check
export function uiAuth(deps: UiAuthDeps): UiAuth {
  const { auth, sessions } = deps;
  const setCookie = (req: Request, res: Response, value: string, maxAge: number): void => {
    res.append('Set-Cookie', `${UI_COOKIE}=${value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${req.secure ? '; Secure' : ''}`);
  };
  /** `next`: where a sign-in from the page shown goes (default: the page asked for). */
  const denied = (req: Request, res: Response, a: Extract<AuthAnswer, { ok: false }>, next = safeNext(req.originalUrl)): void => {
    if (a.retryAfter !== undefined) res.set('Retry-After', String(a.retryAfter));
    if (wantsHtml(req) || req.path === '/ui/login') loginPage(res, next, a.status, a.error, auth.mode === 'insecure');
    else res.status(a.status).json({ error: a.error });
  };
  /** A new session for a verified operator allowed to see the dashboard; the old one, if any, is dropped. */
  const signIn = async (req: Request, res: Response, who: AuthAnswer, next?: string): Promise<UiSession | undefined> => {
    const allowed = who.ok ? await auth.authorise(who.operator, DASHBOARD_PERMISSION) : who;
    if (!allowed.ok) {
      denied(req, res, allowed, next);
      return undefined;
    }
    await sessions.delete(cookieValue(req, UI_COOKIE));
    const { id, session } = await sessions.create(allowed.operator);
    setCookie(req, res, id, sessions.ttlSeconds);
    return session;
  };
  const form = express.urlencoded({ extended: false, limit: 16 * 1024, parameterLimit: 20 });

  const routes = Router();
  routes.get('/ui/login', async (req, res) => {
    const next = safeNext(req.query['next']);
    const proxied = auth.proxyIdentity(asking(req));
    if (proxied) return (await signIn(req, res, proxied, next)) ? onward(res, next) : undefined;
    return loginPage(res, next, 200, '', auth.mode === 'insecure');
  });
  routes.post('/ui/login', form, async (req, res) => {
    const cross = crossSiteReason(req);
    if (cross) return res.status(403).type('text').send(cross);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(body['next']);
    const token = typeof body['token'] === 'string' ? body['token'].trim() : '';
    if (!token && auth.mode !== 'insecure') {
      auth.failed(req.ip ?? '');
      return loginPage(res, next, 401, 'Give a Kubernetes token.');
    }
    const who = await auth.authenticateToken(token || 'insecure', req.ip ?? '');
    return (await signIn(req, res, who, next)) ? onward(res, next) : undefined;
  });
  routes.post('/ui/logout', form, async (req, res) => {
    const id = cookieValue(req, UI_COOKIE);
    const session = await sessions.get(id);
    const cross = crossSiteReason(req);
    if (cross) return res.status(403).type('text').send(cross);
    if (session && !csrfMatches(session, (req.body as Record<string, unknown> | undefined)?.[CSRF_FIELD] ?? req.get(CSRF_HEADER))) {
      return res.status(403).type('text').send('missing or wrong CSRF token');
    }
    await sessions.delete(id);
    setCookie(req, res, '', 0);
    return onward(res, '/ui/login');
  });

  const guard: RequestHandler = async (req, res, next) => {
    const id = cookieValue(req, UI_COOKIE);
    let session = await sessions.get(id);
    const proxied = auth.proxyIdentity(asking(req));
    if (proxied && !proxied.ok) return denied(req, res, proxied);
    if (proxied?.ok && (session?.via !== 'proxy' || session.username !== proxied.operator.username)) {
      // The proxy vouches for someone this session is not: a new session, on a page load only
      // (a write would have no CSRF token of the new session).
      if (!isRead(req)) return res.status(403).json({ error: 'the auth proxy names another user than this session: reload the page' });
      session = await signIn(req, res, proxied);
      if (!session) return undefined;
    }
    if (!session) {
      if (wantsHtml(req)) return loginPage(res, safeNext(req.originalUrl), 401, '', auth.mode === 'insecure');
      return res.status(401).json({ error: 'not signed in (sign in at /ui/login)' });
    }
    if (!isRead(req)) {
      const cross = crossSiteReason(req);
      if (cross) return res.status(403).json({ error: cross });
      await new Promise<void>((resolve, reject) => form(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
      const given = (req.body as Record<string, unknown> | undefined)?.[CSRF_FIELD] ?? req.get(CSRF_HEADER);
      if (!csrfMatches(session, given)) return res.status(403).json({ error: 'missing or wrong CSRF token' });
    }
    const operator = operatorOfSession(session);
    const allowed = await auth.authorise(operator, DASHBOARD_PERMISSION);
    if (!allowed.ok) return denied(req, res, allowed);
    res.locals['uiSession'] = session;
    res.locals['operator'] = operator;
    return next();
  };
  return { routes, guard };
}
