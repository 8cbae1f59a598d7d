import type { ControlsSummary } from '../../controls/status.ts';

// Server-rendered pages of the dashboard: plain HTML, no script, every value escaped. What an
// incident shows: its node, runbook, state, mode, outcome and summary, the plan's steps with
// their status, refusals, and, while it waits, why (pause, approval, breaker).

export interface IncidentStep {
  id: string;
  description: string;
  destructive: boolean;
  status?: string;
  risk?: string;
  error?: string;
  commands?: { argv: string[]; exitCode: number | null; stdout: string; stderr: string; timedOut: boolean }[];
}

export interface Incident {
  id: string;
  queue: string;
  node: string;
  runbook: string;
  state: string;
  createdAt: string;
  finishedAt?: string;
  attemptsMade: number;
  mode?: string;
  modeWhy?: string;
  outcome?: string;
  summary?: string;
  failedReason?: string;
  refusals: string[];
  steps: IncidentStep[];
  waiting?: { reason: string; why: string; since?: string };
  log?: string[];
}

export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Served as /ui/style.css: the Content-Security-Policy allows no inline style. */
export const STYLE = `body.login{max-width:28rem;margin:4rem auto}body.login input{width:100%;padding:.4rem;margin:.4rem 0}
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top;font-size:.92rem}th{background:#f4f4f4}
.banner{padding:.5rem .8rem;margin:.4rem 0;border-radius:4px}.warn{background:#fff3cd}.bad{background:#f8d7da}.ok{background:#e7f5ea}
code,pre{font-family:ui-monospace,monospace;font-size:.85rem}pre{background:#f7f7f7;padding:.4rem;overflow:auto;max-height:16rem}
.o-succeeded{color:#176b2c}.o-failed,.o-refused{color:#a11}.o-waiting{color:#8a5a00}nav a{margin-right:1rem}
form.inline{display:inline}form.decide{margin:.3rem 0}form.decide input[name=why]{width:24rem}`;

/** What every page needs of the session: the CSRF token for its forms, and who is signed in. */
export interface PageCtx {
  csrf: string;
  username: string;
}

const csrfField = (ctx: PageCtx): string => `<input type="hidden" name="_csrf" value="${esc(ctx.csrf)}">`;

function layout(title: string, body: string, ctx: PageCtx): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title><link rel="stylesheet" href="/ui/style.css"></head><body>
<nav><a href="/ui/">Incidents</a><a href="/ui/queues/">Queues</a><span>signed in as <b>${esc(ctx.username)}</b></span> <form class="inline" method="post" action="/ui/logout">${csrfField(ctx)}<button>Sign out</button></form></nav>
${body}</body></html>`;
}

function banners(c: ControlsSummary | undefined): string {
  if (!c) return '<div class="banner warn">Controls could not be read (Redis?).</div>';
  const out: string[] = [];
  if (c.paused.cluster) out.push('<div class="banner bad">Paused cluster-wide: jobs wait until resumed.</div>');
  if (c.paused.nodes.length) out.push(`<div class="banner warn">Paused nodes: ${c.paused.nodes.map(esc).join(', ')}</div>`);
  for (const b of c.breakersTripped) out.push(`<div class="banner bad">Breaker <b>${esc(b.breaker)}</b> tripped at ${esc(b.at)}: ${esc(b.why)}</div>`);
  if (c.parked.approval) out.push(`<div class="banner warn">${c.parked.approval} job(s) wait for approval.</div>`);
  return out.length ? out.join('\n') : '<div class="banner ok">Not paused; no breaker tripped; nothing waits for approval.</div>';
}

const outcomeCell = (i: Incident): string => {
  const o = i.waiting ? `waiting (${i.waiting.reason})` : i.outcome ?? (i.state === 'failed' ? 'failed' : '');
  return `<span class="o-${esc((i.waiting ? 'waiting' : i.outcome) ?? '')}">${esc(o)}</span>`;
};

function stepsTable(steps: IncidentStep[], withCommands: boolean): string {
  if (steps.length === 0) return '<p>No steps.</p>';
  const rows = steps.map((s) => `<tr><td><code>${esc(s.id)}</code></td><td>${esc(s.description)}${s.error ? `<br><b>error:</b> ${esc(s.error)}` : ''}</td>
<td>${s.destructive ? 'destructive' : ''}${s.risk === 'high' ? ' high-risk' : ''}</td><td>${esc(s.status ?? 'planned')}</td></tr>${withCommands && s.commands?.length ? `<tr><td></td><td colspan="3">${s.commands.map((c) => `<pre>$ ${esc(c.argv.join(' '))}  (exit ${esc(c.exitCode ?? (c.timedOut ? 'timed out' : 'n/a'))})\n${esc(c.stdout.slice(0, 2000))}${c.stderr ? `\n${esc(c.stderr.slice(0, 2000))}` : ''}</pre>`).join('')}</td></tr>` : ''}`).join('\n');
  return `<table><thead><tr><th>step</th><th>what</th><th>kind</th><th>status</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function incidentsPage(incidents: Incident[], controls: ControlsSummary | undefined, ctx: PageCtx): string {
  const byNode = new Map<string, Incident[]>();
  for (const i of incidents) byNode.set(i.node, [...(byNode.get(i.node) ?? []), i]);
  const sections = [...byNode.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([node, list]) => `
<h2 id="node-${esc(node)}">${esc(node)}</h2>
<table><thead><tr><th>created</th><th>job</th><th>runbook</th><th>state</th><th>mode</th><th>outcome</th><th>summary and plan</th></tr></thead><tbody>
${list.map((i) => `<tr data-job="${esc(i.id)}"><td>${esc(i.createdAt)}</td><td><a href="/ui/jobs/${encodeURIComponent(i.id)}">${esc(i.id)}</a></td><td>${esc(i.runbook)}</td>
<td>${esc(i.state)}</td><td>${esc(i.mode ?? '')}</td><td>${outcomeCell(i)}</td>
<td>${esc(i.waiting?.why ?? i.summary ?? i.failedReason ?? '')}${i.steps.length ? `<details><summary>plan: ${i.steps.length} step(s)</summary>${stepsTable(i.steps, false)}</details>` : ''}</td></tr>`).join('\n')}
</tbody></table>`).join('\n');
  return layout('volume-medic: incidents', `<h1>Incidents by node</h1>${banners(controls)}${sections || '<p>No jobs yet.</p>'}`, ctx);
}

export function jobPage(i: Incident, approval: unknown, ctx: PageCtx): string {
  const a = approval as { state?: string; steps?: { id: string; why: string }[]; expiresAt?: string; decidedBy?: string; why?: string } | undefined;
  return layout(`volume-medic: ${i.id}`, `<h1>${esc(i.runbook)} on ${esc(i.node)}</h1>
<table><tbody>
<tr><th>job</th><td><code>${esc(i.id)}</code> (queue ${esc(i.queue)})</td></tr>
<tr><th>state</th><td>${esc(i.state)}, attempts ${i.attemptsMade}</td></tr>
<tr><th>mode</th><td>${esc(i.mode ?? '')} ${i.modeWhy ? `<small>(${esc(i.modeWhy)})</small>` : ''}</td></tr>
<tr><th>outcome</th><td>${outcomeCell(i)} ${esc(i.summary ?? i.failedReason ?? '')}</td></tr>
${i.waiting ? `<tr><th>waiting</th><td>${esc(i.waiting.reason)} since ${esc(i.waiting.since ?? '')}: ${esc(i.waiting.why)}</td></tr>` : ''}
${a ? `<tr><th>approval</th><td>${esc(a.state)}${a.decidedBy ? ` by ${esc(a.decidedBy)}` : ''}${a.why ? `: ${esc(a.why)}` : ''}; expires ${esc(a.expiresAt)}; steps ${esc((a.steps ?? []).map((s) => s.id).join(', '))}. Decide with <code>volume-medic approve|reject ${esc(i.id)}</code>${a.state === 'pending' ? ' or here' : ''}.${a.state === 'pending' ? decideForms(i.id, ctx) : ''}</td></tr>` : ''}
${i.refusals.length ? `<tr><th>refused</th><td><ul>${i.refusals.map((r) => `<li>${esc(r)}</li>`).join('')}</ul></td></tr>` : ''}
</tbody></table>
<h2>Plan and steps</h2>${stepsTable(i.steps, true)}
<h2>Log</h2><pre>${esc((i.log ?? []).join('\n'))}</pre>`, ctx);
}

/** Approve and Reject, recorded as the signed-in operator (if RBAC lets them). */
function decideForms(id: string, ctx: PageCtx): string {
  const action = (verb: string) => `/ui/jobs/${encodeURIComponent(id)}/${verb}`;
  return `<form class="decide" method="post" action="${esc(action('approve'))}">${csrfField(ctx)}<input name="why" placeholder="why (optional)" maxlength="500"> <button name="decision" value="approve">Approve</button></form>
<form class="decide" method="post" action="${esc(action('reject'))}">${csrfField(ctx)}<input name="why" placeholder="why (required)" maxlength="500" required> <button name="decision" value="reject">Reject</button></form>`;
}
