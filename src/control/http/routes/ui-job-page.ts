import { retriedFrom, type Incident, type IncidentStep } from '../../console/incident.ts';
import type { IncidentDetail } from '../../console/incident-detail.ts';
import { shellQuote } from '../../console/shell-quote.ts';
import { actionForm, esc, layout, time, waited, type PageCtx } from './ui-pages.ts';

// One incident in full, for the person who must decide at 3 a.m.: what started it, what it
// observed (every interlock's evidence with its verdict), what it plans to run (each step's
// exact argv), what it has done (status and output, collapsed and scrollable), who decided
// what, and the buttons, disabled when RBAC says no.

export interface JobView extends IncidentDetail {
  /** Whether this receiver offers retries at all. */
  canRetry?: boolean;
  self: string;
}

const json = (v: unknown): string => {
  try {
    return JSON.stringify(v, null, 2) ?? '';
  } catch {
    return String(v);
  }
};

const VERDICT: Record<string, string> = { holds: 'holds', fails: 'fails', missing: 'missing (unknown)', contradicted: 'contradicted' };

function evidenceList(s: IncidentStep): string {
  if (!s.evidence.length) return s.destructive ? '<p class="o-refused">No evidence named: the engine refuses a destructive step without it.</p>' : '';
  return `<table class="evidence"><caption class="muted">evidence (interlocks)</caption><thead><tr><th>verdict</th><th>claim</th><th>seen by</th><th>when</th></tr></thead><tbody>
${s.evidence.map((e) => `<tr><td><span class="v v-${esc(e.status)}">${esc(VERDICT[e.status] ?? e.status)}</span></td><td>${esc(e.claim)}${e.detail ? `<br><small>${esc(e.detail)}</small>` : ''}</td><td><code>${esc(e.source)}</code></td><td>${time(e.observedAt)}</td></tr>`).join('')}
</tbody></table>`;
}

function stepSection(s: IncidentStep, n: number): string {
  const planned = s.plannedArgv?.length
    ? `<p class="muted">would run:</p>${s.plannedArgv.map((a) => `<pre class="argv">$ ${esc(a.map(shellQuote).join(' '))}</pre>`).join('')}`
    : s.status === 'planned'
      ? '<p class="muted">argv: not recorded for this step (planned before the console recorded argv).</p>'
      : '';
  const ran = s.commands
    .map(
      (
        c,
        i,
      ) => `<details id="out-${n}-${i}"><summary><code>$ ${esc(c.argv.map(shellQuote).join(' '))}</code> — exit ${esc(c.timedOut ? 'timed out' : (c.exitCode ?? 'n/a (not run)'))}${c.durationMs !== undefined ? `, ${Math.round(c.durationMs)} ms` : ''}</summary>
<pre aria-label="output">${esc(c.stdout)}${c.stderr ? `\n--- stderr ---\n${esc(c.stderr)}` : ''}</pre></details>`,
    )
    .join('');
  return `<section class="step" aria-labelledby="step-${n}"><h3 id="step-${n}">${n + 1}. <code>${esc(s.id)}</code> <span class="status">${esc(s.status)}</span>${s.destructive ? '<span class="tag">destructive</span>' : ''}${s.risk === 'high' ? '<span class="tag hi">high risk</span>' : ''}</h3>
<p>${esc(s.description)}</p>${s.error ? `<p class="o-failed"><b>error:</b> ${esc(s.error)}</p>` : ''}${s.waitsFor ? `<p class="o-waiting">${esc(s.waitsFor)}</p>` : ''}
${evidenceList(s)}${planned}${s.plannedNote ? `<p class="muted">${esc(s.plannedNote)}</p>` : ''}${ran}</section>`;
}

function approvalBlock(v: JobView, ctx: PageCtx): string {
  const a = v.approval;
  if (!a) return '';
  // A request whose seal does not hold was not written by the job's worker: shown, never decided.
  const pending = a.state === 'pending' && !v.approvalUnverified;
  const steps = a.steps.map((s) => `<li><code>${esc(s.id)}</code>: ${esc(s.description)} — <i>${esc(s.why)}</i></li>`).join('');
  const id = encodeURIComponent(v.incident.id);
  return `<section aria-labelledby="approval-h"><h2 id="approval-h">Approval</h2>
<dl class="facts"><dt>approval</dt><dd>${esc(a.state)}${a.decidedBy ? ` by ${esc(a.decidedBy)}` : ''}${a.why ? `: ${esc(a.why)}` : ''}${a.decidedAt ? ` (${time(a.decidedAt)})` : ''}</dd>
<dt>requested</dt><dd>${pending ? waited(a.requestedAt) : time(a.requestedAt)}</dd><dt>expires</dt><dd>${time(a.expiresAt)}</dd>
<dt>covers</dt><dd><ul>${steps}</ul></dd></dl>${v.approvalUnverified ? `<div class="banner bad" role="alert"><strong class="unverified">Not verified:</strong> ${esc(v.approvalUnverified)}. This request was not written by the job's worker; it cannot be approved or rejected.</div>` : ''}
${
  pending
    ? `${actionForm(ctx, { action: 'approve', id: 'approve', url: `/ui/jobs/${id}/approve`, label: 'Approve', confirm: 'I have read the evidence and the commands: let these steps run', back: v.self })}
${actionForm(ctx, { action: 'reject', id: 'reject', url: `/ui/jobs/${id}/reject`, label: 'Reject', back: v.self })}
<p class="muted">Or: <code>volume-medic approve|reject ${esc(v.incident.id)} --why "…"</code></p>`
    : ''
}</section>`;
}

/** A failed job: its retry if one was made, else the Retry button (a new job sealed afresh). */
function retryBlock(v: JobView, ctx: PageCtx): string {
  const i = v.incident;
  if (i.state !== 'failed' || !v.canRetry) return '';
  const id = encodeURIComponent(i.id);
  const body = v.retriedAs
    ? `<p>Retried as <a href="/ui/jobs/${encodeURIComponent(v.retriedAs.id)}">${esc(v.retriedAs.id)}</a> (${esc(v.retriedAs.state)}).</p>`
    : `<p class="muted">A new job for the same work, sealed afresh by the receiver; steps this line of jobs already took are not repeated (the node's journal), every check runs again, and high-risk steps need a new approval.</p>
${actionForm(ctx, { action: 'retry', id: 'retry', url: `/ui/jobs/${id}/retry`, label: 'Retry', confirm: 'Run this job again: its remaining steps may run, destructive ones included', back: v.self })}
<p class="muted">Or: <code>volume-medic retry ${esc(i.id)} --why "…"</code></p>`;
  return `<section aria-labelledby="retry-h"><h2 id="retry-h">Retry</h2>${body}</section>`;
}

/** The Events the job wrote, as listed from the API server; unknown said as unknown, never "none". */
function eventsBlock(v: JobView): string {
  const e = v.events;
  const body =
    'unknown' in e
      ? `<p class="o-waiting">Unknown: ${esc(e.unknown)}.</p>`
      : e.events.length
        ? `<table class="events"><thead><tr><th>last seen</th><th>type</th><th>reason</th><th>on</th><th>count</th><th>note</th></tr></thead><tbody>${e.events.map((x) => `<tr data-reason="${esc(x.reason)}"><td data-label="last seen">${time(x.lastAt)}</td><td data-label="type">${esc(x.type)}</td><td data-label="reason">${esc(x.reason)}</td><td data-label="on"><code>${esc(x.regarding)}</code></td><td data-label="count">${x.count}</td><td data-label="note">${esc(x.note)}</td></tr>`).join('')}</tbody></table>`
        : '<p>None found (Events expire after an hour by default; a job that never started writes none).</p>';
  return `<section aria-labelledby="events-h"><h2 id="events-h">Kubernetes Events it wrote</h2>${body}</section>`;
}

/** What the job names: from its own data, no lookup; what it does not name is said to be unknown. */
function relatedBlock(i: Incident): string {
  const t = (i.target && typeof i.target === 'object' ? i.target : {}) as Record<string, unknown>;
  const s = (k: string): string | undefined => (typeof t[k] === 'string' ? (t[k] as string) : undefined);
  const ref = (v: unknown): string | undefined => {
    const o = v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
    return o && typeof o['namespace'] === 'string' && typeof o['name'] === 'string' ? `${o['namespace']}/${o['name']}` : undefined;
  };
  const rows: [string, string | undefined][] = [
    // A node queue's job is its node's: the record's own claim is not shown as the node.
    ['node', i.recordNames ? i.node : (s('node') ?? (i.node !== '(cluster)' ? i.node : undefined))],
    ['PersistentVolume', s('pv')],
    ['device path', s('path')],
    ['RBD image', s('pool') && s('image') ? `${s('pool')}/${s('image')}` : undefined],
    ['RBD watcher', s('watcher')],
    ['pod', ref(t['pod'])],
  ].filter(([, v]) => v !== undefined) as [string, string][];
  const named = rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd><code>${esc(v)}</code></dd>`).join('');
  return `<section aria-labelledby="related-h"><h2 id="related-h">Related objects</h2><dl class="facts related">${named}</dl>
<p class="muted">As the job names them. Claims, pods on the node and VolumeAttachments are looked at by the runbook when it runs (see each step's evidence); not named here means unknown, not absent.</p></section>`;
}

/**
 * The interlocks that stopped or hold the job, one row each as a step's evidence is shown: what
 * was checked, the verdict, which process saw it, when. A refusal's reasons are the runbook's own
 * words (its plan or its evidence check, on the worker that ran it); a parked job's the engine's.
 */
function interlocksBlock(i: Incident): string {
  const seenBy = i.ranOn ?? (i.node === '(cluster)' ? 'the cluster worker' : `the agent of ${i.node}`);
  const rows: [string, string, string, string | undefined][] = [
    ...i.refusals.map((r): [string, string, string, string | undefined] => [r, 'refused', seenBy, i.finishedAt]),
    ...(i.waiting ? [[i.waiting.why, `waits (${i.waiting.reason})`, seenBy, i.waiting.since] as [string, string, string, string | undefined]] : []),
  ];
  if (!rows.length) return '';
  return `<section aria-labelledby="refused-h"><h2 id="refused-h">${i.refusals.length ? 'Refused by its interlocks' : 'Held by an interlock'}</h2>
<table class="interlocks"><thead><tr><th>interlock</th><th>verdict</th><th>seen by</th><th>when</th></tr></thead><tbody>
${rows.map(([what, verdict, by, at]) => `<tr data-verdict="${esc(verdict.split(' ')[0] ?? '')}"><td data-label="interlock">${esc(what)}</td><td data-label="verdict" class="${verdict === 'refused' ? 'o-refused' : 'o-waiting'}">${esc(verdict)}</td><td data-label="seen by">${esc(by)}</td><td data-label="when">${at ? time(at) : 'unknown'}</td></tr>`).join('\n')}
</tbody></table></section>`;
}

/** What the sender itself said (an alert's summary, description and runbook link; an Event's note), not only our signal line. */
function senderWords(raw: unknown): string {
  const o = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
  const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : undefined);
  const r = o(raw);
  const a = o(r?.['annotations']);
  const summary = text(a?.['summary']);
  const description = text(a?.['description']) ?? text(r?.['note']) ?? text(r?.['message']);
  const link = text(a?.['runbook_url']);
  // Only a web address becomes a link (an annotation is the sender's text, not ours to trust).
  const safeLink = link && /^https?:\/\/[^\s"'<>]+$/.test(link) ? link : undefined;
  if (!summary && !description && !link) return '';
  return `<dl class="facts sender">${summary ? `<dt>summary</dt><dd>${esc(summary)}</dd>` : ''}${description ? `<dt>description</dt><dd>${esc(description)}</dd>` : ''}${link ? `<dt>runbook</dt><dd>${safeLink ? `<a href="${esc(safeLink)}" rel="noopener noreferrer" target="_blank">${esc(safeLink)}</a>` : `<code>${esc(link)}</code>`}</dd>` : ''}</dl>`;
}

/** What the console and the CLI say of a job whose record names another node than its queue's. */
const recordMismatch = (i: Pick<Incident, 'node' | 'queue' | 'recordNames'>): string =>
  `names node ${i.recordNames ?? '?'}, but it is in ${i.node}'s queue (${i.queue}): it is ${i.node}'s, whatever its record says (edited in Redis, or moved)`;

/** The job's VolumeRemediation: how to read it with kubectl (its status links back here). */
const recordFact = (v: JobView): string =>
  v.record
    ? `<dt>in Kubernetes</dt><dd data-record="${esc(v.record.name)}"><code>kubectl get volumeremediation ${esc(v.record.name)} -n ${esc(v.record.namespace)} -o yaml</code></dd>`
    : '';

export function jobPage(v: JobView, ctx: PageCtx): string {
  const i = v.incident;
  const node = i.node !== '(cluster)' ? i.node : undefined;
  const facts = `<dl class="facts">
<dt>job</dt><dd><code>${esc(i.id)}</code> (queue <code>${esc(i.queue)}</code>)</dd>
${recordFact(v)}
<dt>state</dt><dd data-state="${esc(i.state)}">${esc(i.state)}, attempts ${i.attemptsMade}</dd>
<dt>mode</dt><dd>${esc(i.mode ?? '')} ${i.modeWhy ? `<small>(${esc(i.modeWhy)})</small>` : ''}</dd>
<dt>outcome</dt><dd><span class="o-${esc(i.waiting ? 'waiting' : (i.outcome ?? ''))}">${esc(i.waiting ? `waiting (${i.waiting.reason})` : (i.outcome ?? ''))}</span> ${esc(i.summary ?? i.failedReason ?? '')}</dd>
${i.waiting ? `<dt>waiting</dt><dd>${esc(i.waiting.reason)} ${waited(i.waiting.since)}: ${esc(i.waiting.why)}</dd>` : ''}
${i.retry ? `<dt>retry</dt><dd>${i.retry.n === 1 ? 'first' : `#${i.retry.n}`} retry of <a href="/ui/jobs/${encodeURIComponent(retriedFrom(i.retry))}">${esc(retriedFrom(i.retry))}</a></dd>` : ''}
<dt>created</dt><dd>${time(i.createdAt)}</dd>${i.finishedAt ? `<dt>finished</dt><dd>${time(i.finishedAt)}</dd>` : ''}${i.ranOn ? `<dt>ran on</dt><dd>${esc(i.ranOn)}</dd>` : ''}
${i.valid ? '' : '<dt>job data</dt><dd class="o-failed">does not match the job catalogue: shown as stored, never run</dd>'}
${i.recordNames ? `<dt>record</dt><dd class="o-failed" data-record-names="${esc(i.recordNames)}">${esc(recordMismatch(i))}</dd>` : ''}
</dl>`;
  const signals = `<section aria-labelledby="signal-h"><h2 id="signal-h">What started it</h2>${i.signals.length ? i.signals.map((s, n) => `<p><b>${esc(s.source)}</b>: ${esc(s.summary)}</p>${senderWords(s.raw)}<details id="signal-${n}"><summary>as received</summary><pre>${esc(json(s.raw))}</pre></details>`).join('') : '<p>No signal recorded.</p>'}
${i.target !== undefined ? `<details id="target"><summary>target</summary><pre>${esc(json(i.target))}</pre></details>` : ''}</section>`;
  const refusals = interlocksBlock(i);
  const plan = `<section aria-labelledby="plan-h"><h2 id="plan-h">Plan and steps</h2>${i.steps.length ? i.steps.map(stepSection).join('') : '<p>No steps.</p>'}</section>`;
  const nodeActions = node
    ? `<section aria-labelledby="node-h"><h2 id="node-h">Node ${esc(node)}</h2>${
        v.nodePause
          ? `<p>Paused by ${esc(v.nodePause.by)} ${waited(v.nodePause.at)}${v.nodePause.why ? `: ${esc(v.nodePause.why)}` : ''}.</p>${actionForm(ctx, { action: 'resume', id: 'resume-node', url: '/ui/resume', label: `Resume ${node}`, fields: { node }, confirm: `Resume ${node}: its parked jobs go on`, back: v.self })}`
          : actionForm(ctx, { action: 'pause', id: 'pause-node', url: '/ui/pause', label: `Pause ${node}`, fields: { node }, back: v.self })
      }</section>`
    : '';
  const audit = `<section aria-labelledby="audit-h"><h2 id="audit-h">Audit trail</h2>${v.audit.length ? `<table><thead><tr><th>when</th><th>who</th><th>what</th><th>why</th></tr></thead><tbody>${v.audit.map((e) => `<tr data-action="${esc(e.action)}"><td>${time(e.at)}</td><td>${esc(e.by)}</td><td>${esc(e.action)}${e.target !== `job/${i.id}` ? ` <code>${esc(e.target)}</code>` : ''}</td><td>${esc(e.why)}${e.verified === false ? ` <strong class="unverified" title="${esc(e.unverifiedWhy ?? '')}">not verified: ${esc(e.unverifiedWhy ?? 'not written by the process that acted')}</strong>` : ''}</td></tr>`).join('')}</tbody></table>` : '<p>No entries.</p>'}</section>`;
  const log = `<details id="job-log"><summary>Job log (${v.log.length} lines)</summary><pre>${esc(v.log.join('\n'))}</pre></details>`;
  return layout(
    `volume-medic: ${i.runbook} on ${i.node}`,
    `<h1>${esc(i.runbook)} on ${esc(i.node)}</h1>${facts}${approvalBlock(v, ctx)}${retryBlock(v, ctx)}${signals}${relatedBlock(i)}${refusals}${plan}${eventsBlock(v)}${nodeActions}${audit}${log}`,
    ctx,
    v.self,
  );
}
