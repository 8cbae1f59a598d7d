import { createHash } from 'node:crypto';
// What every page of the on-call console shares: the layout, escaping, times, and the
// forms of actions. Pages are rendered on the server, every value escaped; the one script
// (ui-assets.ts) only refreshes a page's live region, writes relative times and nothing else.

export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What every page needs of the session: the CSRF token for its forms, who is signed in, and what they may do. */
export interface PageCtx {
  csrf: string;
  username: string;
  /** SubjectAccessReview answers for the actions the page offers (`approve jobs`, ...). */
  can?: Partial<Record<ActionName, boolean>>;
}

export type ActionName = 'approve' | 'reject' | 'pause' | 'resume' | 'reset' | 'retry';
/** The RBAC verb each action needs, as the operator is told when it is missing. */
const ACTION_VERB: Record<ActionName, string> = {
  approve: 'approve jobs.volume-medic.io',
  reject: 'reject jobs.volume-medic.io',
  pause: 'create pauses.volume-medic.io',
  resume: 'delete pauses.volume-medic.io',
  reset: 'reset breakers.volume-medic.io',
  retry: 'retry jobs.volume-medic.io',
};

const csrfField = (ctx: PageCtx): string => `<input type="hidden" name="_csrf" value="${esc(ctx.csrf)}">`;

/** An absolute time (UTC) that the script follows with a relative one ("4 min ago"). */
export const time = (iso: string | undefined): string =>
  iso ? `<time datetime="${esc(iso)}" data-rel>${esc(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>` : '';
/** How long something has waited, written by the script from `since` (the absolute time without it). */
export const waited = (since: string | undefined): string => (since ? `<span class="waited" data-since="${esc(since)}">since ${time(since)}</span>` : '');

/**
 * `top`: what stays put (filters); `body`: the live region, which the script refreshes by
 * polling `live` with ETag when given.
 */
export function layout(title: string, body: string, ctx: PageCtx, live?: string, top = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)}</title><link rel="stylesheet" href="/ui/style.css"><script src="/ui/console.js" defer></script></head><body>
<header><nav aria-label="main"><a href="/ui/">Incidents</a><a href="/ui/fleet">Fleet</a><a href="/ui/queues/">Queues</a><span class="who">signed in as <b>${esc(ctx.username)}</b></span> <form class="inline" method="post" action="/ui/logout">${csrfField(ctx)}<button>Sign out</button></form></nav></header>
<main>${top}<div id="live"${live ? ` data-live="${esc(live)}"` : ''}>
${body}</div></main><p class="live-status" role="status" aria-live="polite" id="live-status"></p></body></html>`;
}

/**
 * A form for one action: a required reason, a required confirmation for the ones that let
 * something destructive run, and the button disabled (with why) when RBAC says no. The server
 * checks all of it again (the verb with SubjectAccessReview, CSRF, origin).
 */
export function actionForm(
  ctx: PageCtx,
  a: {
    action: ActionName;
    url: string;
    label: string;
    fields?: Record<string, string>;
    confirm?: string;
    back: string;
    id?: string;
    choose?: { name: string; label: string; options: readonly string[] };
  },
): string {
  const allowed = ctx.can?.[a.action] !== false;
  // A stable id (labels need one; the live region's ETag must not change between renders).
  const id =
    a.id ??
    `${a.action}-${createHash('sha256')
      .update(a.url + JSON.stringify(a.fields ?? {}))
      .digest('hex')
      .slice(0, 10)}`;
  const hidden = Object.entries({ ...a.fields, back: a.back })
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`)
    .join('');
  return `<form class="action action-${esc(a.action)}" method="post" action="${esc(a.url)}">${csrfField(ctx)}${hidden}
${a.choose ? `<label for="${esc(id)}-${esc(a.choose.name)}">${esc(a.choose.label)}</label><select id="${esc(id)}-${esc(a.choose.name)}" name="${esc(a.choose.name)}" required${allowed ? '' : ' disabled'}>${a.choose.options.map((o) => `<option>${esc(o)}</option>`).join('')}</select>` : ''}
<label for="${esc(id)}-why">Reason</label><input id="${esc(id)}-why" name="why" required maxlength="500" autocomplete="off"${allowed ? '' : ' disabled'}>
${a.confirm ? `<label class="confirm"><input type="checkbox" name="confirm" value="yes" required${allowed ? '' : ' disabled'}> ${esc(a.confirm)}</label>` : ''}
<button type="submit" name="action" value="${esc(a.action)}"${allowed ? '' : ` disabled aria-describedby="${esc(id)}-no"`}>${esc(a.label)}</button>
${allowed ? '' : `<small class="denied" id="${esc(id)}-no">${esc(ctx.username)} may not: needs <code>${esc(ACTION_VERB[a.action])}</code></small>`}</form>`;
}
