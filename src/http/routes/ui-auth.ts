import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type Request, type RequestHandler, type Response } from 'express';

// Browsers cannot send a bearer header, so /ui also accepts the token once, through a login
// form or `?token=` on any /ui page, and answers with an HttpOnly, SameSite=Strict cookie
// scoped to /ui. The cookie holds a hash of the token, not the token: it opens the dashboard
// and nothing else (the /v1 API still wants the bearer header). A `?token=` is dropped from the
// address bar at once (Referrer-Policy: no-referrer meanwhile). The onward navigation is a
// same-site page refresh, not a redirect, so a link opened from another site (a chat, a
// runbook wiki) still gets its Strict cookie on the next request.

export const UI_COOKIE = 'vm_ui';
const MAX_AGE_S = 12 * 3600;

const digest = (v: string): Buffer => createHash('sha256').update(v, 'utf8').digest();
const session = (token: string): string => createHash('sha256').update(`volume-medic-ui-session\0${token}`, 'utf8').digest('base64url');

/** The cookie's value; undefined when absent or not valid percent-encoding (a bad cookie is no session, never a 500). */
export function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
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

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Only our own pages are followed after a login (no open redirect). */
const safeNext = (v: unknown): string => (typeof v === 'string' && /^\/ui(\/[A-Za-z0-9._~%/?&=-]*)?$/.test(v) ? v : '/ui/');

function onward(res: Response, to: string): void {
  res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).type('html')
    .send(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${esc(to)}"><title>volume-medic</title><a href="${esc(to)}">continue</a>`);
}

function loginPage(res: Response, next: string, status: number, note = ''): void {
  res.status(status).set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).type('html').send(`<!doctype html>
<html><head><meta charset="utf-8"><title>volume-medic: sign in</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto}input{width:100%;padding:.4rem;margin:.4rem 0}</style></head>
<body><h1>volume-medic</h1>${note ? `<p role="alert">${esc(note)}</p>` : ''}
<form method="post" action="/ui/login"><label>API token <input type="password" name="token" autocomplete="current-password" autofocus></label>
<input type="hidden" name="next" value="${esc(next)}"><button type="submit">Sign in</button></form></body></html>`);
}

export interface UiAuth {
  /** /ui/login and /ui/logout. */
  routes: Router;
  /** Guards everything else under /ui. */
  guard: RequestHandler;
}

export function uiAuth(tokens: readonly string[]): UiAuth {
  const expected = tokens.map(digest);
  const sessions = tokens.map((t) => digest(session(t)));
  const matches = (list: Buffer[], v: string | undefined): boolean => {
    if (v === undefined) return false;
    const given = digest(v);
    let ok = false;
    for (const e of list) ok = timingSafeEqual(e, given) || ok;
    return ok;
  };
  const sessionFor = (token: string): string | undefined => (matches(expected, token) ? session(token) : undefined);
  const setCookie = (req: Request, res: Response, value: string, maxAge: number): void => {
    res.append('Set-Cookie', `${UI_COOKIE}=${value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${req.secure ? '; Secure' : ''}`);
  };

  const routes = Router();
  routes.get('/ui/login', (req, res) => (tokens.length === 0 ? onward(res, safeNext(req.query['next'])) : loginPage(res, safeNext(req.query['next']), 200)));
  routes.post('/ui/login', express.urlencoded({ extended: false, limit: 4096 }), (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(body['next']);
    const s = typeof body['token'] === 'string' ? sessionFor(body['token'].trim()) : undefined;
    if (!s) return loginPage(res, next, 401, 'That token is not valid.');
    setCookie(req, res, s, MAX_AGE_S);
    return onward(res, next);
  });
  routes.post('/ui/logout', (req, res) => {
    setCookie(req, res, '', 0);
    onward(res, '/ui/login');
  });

  const guard: RequestHandler = (req, res, next) => {
    if (tokens.length === 0) return next();
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
    if (bearer !== undefined && matches(expected, bearer)) return next();
    const q = req.query['token'];
    if (typeof q === 'string' && req.method === 'GET') {
      const s = sessionFor(q);
      if (s) {
        setCookie(req, res, s, MAX_AGE_S);
        const url = new URL(req.originalUrl, 'http://x');
        url.searchParams.delete('token');
        return onward(res, `${url.pathname}${url.search}`);
      }
    }
    if (matches(sessions, cookieValue(req, UI_COOKIE))) return next();
    if (req.method === 'GET' && (req.accepts(['html', 'json']) === 'html')) {
      return loginPage(res, safeNext(req.originalUrl.replace(/([?&])token=[^&]*&?/, '$1')), 401, typeof q === 'string' ? 'That token is not valid.' : '');
    }
    res.set('WWW-Authenticate', 'Bearer realm="volume-medic"').status(401).json({ error: 'missing or invalid token (sign in at /ui/login)' });
  };
  return { routes, guard };
}
