import { Router } from 'express';
import { knownQueuesKey } from '../../../adapters/redis/known-queues.ts';
import { uiAuth } from './ui-auth.ts';
import { SCRIPT, STYLE } from './ui-assets.ts';
import { consoleRoutes } from './ui-console.ts';
import type { UiDeps } from './ui-deps.ts';

// The dashboard under /ui, for operators signed in as ui-auth.ts says:
// - /ui/queues/: bull-board over every queue the receiver has used (node queues appear as
//   nodes get their first job), always read-only: its own write API (add, retry, promote,
//   clean, obliterate) takes arbitrary job data, so it is refused whatever its buttons show;
// - /ui/ the on-call console (ui-console.ts): incidents, one incident in full, and the actions,
//   each with the operator's own RBAC verb (SubjectAccessReview), as the API's.

const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
].join('; ');

const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': UI_CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

const BOARD_PATH = '/ui/queues';

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
  r.get('/ui/console.js', (_req, res) => res.set('Cache-Control', 'max-age=3600').type('js').send(SCRIPT));
  r.use(auth.routes);
  r.use('/ui', auth.guard);

  const board = deps.board(BOARD_PATH);
  let shown = '';
  let checkedAt = 0;
  const refreshQueues = async (): Promise<void> => {
    if (Date.now() - checkedAt < 2_000) return;
    checkedAt = Date.now();
    const names = (await deps.redis.smembers(knownQueuesKey(deps.prefix))).sort();
    if (names.join('\n') === shown) return;
    shown = names.join('\n');
    board.show(names);
  };
  r.use(
    BOARD_PATH,
    async (req, res, next) => {
      // Read-only means read-only, whatever the board's own buttons do.
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return res.status(405).json({ error: 'the queue board is read-only; decide on waiting jobs on their /ui/jobs/<id> page or with the CLI' });
      try {
        await refreshQueues();
      } catch {
        // Redis away: the board shows what it had.
      }
      return next();
    },
    board.router,
  );

  r.use(consoleRoutes(deps));
  return r;
}
