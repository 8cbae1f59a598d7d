import type { IncidentFilter, IncidentPage } from '../../console/incident-list.ts';
import { CONSOLE_STATES, LAST_WINDOWS, instantMs } from '../../console/incident-list.ts';
import { consoleState, type Incident } from '../../console/incident.ts';
import type { StateCounts } from '../../console/state-counts.ts';
import { whyWaiting, type WaitContext } from '../../console/why-waiting.ts';
import type { Storm } from '../../console/storms.ts';
import { RUNBOOKS } from '../../../core/catalogue/jobs.ts';
import type { Pauses } from '../../../adapters/controls/controls-store.ts';
import type { ParkedJob, ParkReason, TripRecord } from '../../../core/controls/records.ts';
import { actionForm, esc, layout, time, waited, type PageCtx } from './ui-pages.ts';

// The incidents view: what is wrong now (banners for pauses, tripped breakers and jobs waiting
// for a human, with how long they have waited), counts by state, filters, and a page of
// incidents newest first. The live region refreshes itself (ui-assets.ts); older pages stay put.

export interface IncidentsView {
  filter: IncidentFilter;
  page: IncidentPage;
  counts?: { counts: StateCounts; queues: number };
  /** Jobs parked on a control, by reason (all of them: the hash is as long as the storm). */
  parked?: ParkedJob[];
  pauses?: Pauses;
  tripped?: TripRecord[];
  /** This page's URL (the script polls it; actions come back to it). */
  self: string;
  /** Each queue's agent state (the fleet scan), so a job no worker took yet says why it waits. */
  agentOf?: WaitContext['agentOf'];
  /** Nodes whose jobs wait with no agent to take them (the fleet scan). */
  nodesWithoutAgent?: number;
  /** Storms among the newest incidents, each one line (src/control/console/storms.ts). */
  storms?: Storm[];
}

const SHOWN_WAITING = 20;

export const filterQuery = (f: Partial<IncidentFilter>): string => {
  const q = new URLSearchParams();
  for (const k of ['node', 'runbook', 'state', 'mode', 'last', 'since', 'until', 'before'] as const) if (f[k] !== undefined) q.set(k, String(f[k]));
  const s = q.toString();
  return s ? `/ui/?${s}` : '/ui/';
};

function banners(v: IncidentsView, ctx: PageCtx): string {
  const out: string[] = [];
  if (!v.pauses || !v.tripped || !v.parked)
    out.push('<div class="banner warn" role="alert">The controls could not be read (Redis?): pauses, breakers and approvals are not shown.</div>');
  const p = v.pauses;
  if (p?.cluster) {
    out.push(`<div class="banner bad" role="alert"><b>Paused cluster-wide</b> by ${esc(p.cluster.by)} ${waited(p.cluster.at)}${p.cluster.why ? `: ${esc(p.cluster.why)}` : ''}. Jobs wait until resumed.
${actionForm(ctx, { action: 'resume', url: '/ui/resume', label: 'Resume the cluster', confirm: 'Resume: parked jobs go on, destructive steps included', back: v.self })}</div>`);
  }
  for (const [node, rec] of Object.entries(p?.nodes ?? {})) {
    out.push(`<div class="banner warn"><b>Node ${esc(node)} paused</b> by ${esc(rec.by)} ${waited(rec.at)}${rec.why ? `: ${esc(rec.why)}` : ''}.
${actionForm(ctx, { action: 'resume', url: '/ui/resume', label: `Resume ${node}`, fields: { node }, confirm: `Resume ${node}: its parked jobs go on`, back: v.self })}</div>`);
  }
  for (const [runbook, rec] of Object.entries(p?.runbooks ?? {})) {
    out.push(`<div class="banner warn"><b>Runbook ${esc(runbook)} paused</b> everywhere by ${esc(rec.by)} ${waited(rec.at)}${rec.why ? `: ${esc(rec.why)}` : ''}.
${actionForm(ctx, { action: 'resume', url: '/ui/resume', label: `Resume ${runbook}`, fields: { runbook }, confirm: `Resume ${runbook}: its parked jobs go on`, back: v.self })}</div>`);
  }
  for (const t of v.tripped ?? []) {
    out.push(`<div class="banner bad" role="alert"><b>Breaker ${esc(t.breaker)} tripped</b> ${waited(t.at)}: ${esc(t.why)} (${t.count}/${t.cap}). Destructive steps stop until it is reset.
${actionForm(ctx, { action: 'reset', url: '/ui/breakers/reset', label: `Reset ${t.breaker}`, fields: { breaker: t.breaker }, confirm: 'Reset: destructive steps may run again', back: v.self })}</div>`);
  }
  if (v.nodesWithoutAgent) {
    out.push(
      `<div class="banner bad" role="alert"><b>${v.nodesWithoutAgent} node(s) with jobs and no agent</b>: their jobs wait until a node agent runs there (the DaemonSet kept off by a nodeSelector or taint, or crash-looping). <a href="/ui/fleet?sort=agent">The fleet</a></div>`,
    );
  }
  out.push(...parkedBanners(v));
  if (!out.length) out.push('<div class="banner ok">Not paused; no breaker tripped; nothing waits for approval.</div>');
  return out.join('\n');
}

/** Jobs parked before a step: those waiting for approval and for another tool on their node listed, the rest counted. */
function parkedBanners(v: IncidentsView): string[] {
  const out: string[] = [];
  const listed = (jobs: ParkedJob[], line: (j: ParkedJob) => string): string =>
    `<ul class="waiting">${jobs.slice(0, SHOWN_WAITING).map(line).join('')}</ul>${jobs.length > SHOWN_WAITING ? `<a href="${esc(filterQuery({ state: 'parked' }))}">all ${jobs.length}</a>` : ''}`;
  const jobLink = (j: ParkedJob): string => `<a href="/ui/jobs/${encodeURIComponent(j.jobId)}">${esc(j.runbook)} on ${esc(j.node ?? '(cluster)')}</a>`;
  const approvals = (v.parked ?? []).filter((j) => j.reason === 'approval');
  if (approvals.length) {
    out.push(
      `<div class="banner warn" role="alert"><b>${approvals.length} job(s) wait for approval</b>${listed(approvals, (j) => `<li>${jobLink(j)} ${waited(j.since)}</li>`)}</div>`,
    );
  }
  const others = (['paused', 'breaker', 'evidence'] as ParkReason[])
    .map((r) => [r, (v.parked ?? []).filter((j) => j.reason === r).length] as const)
    .filter(([, n]) => n > 0);
  if (others.length)
    out.push(`<div class="banner warn">Parked: ${others.map(([r, n]) => `${n} on ${r === 'evidence' ? 'evidence maturing' : r}`).join(', ')}.</div>`);
  // Who holds each node (kured's reboot lock, a drain, medik8s, or unknown) is in the job's why.
  const coordination = (v.parked ?? []).filter((j) => j.reason === 'coordination');
  if (coordination.length) {
    out.push(
      `<div class="banner warn"><b>${coordination.length} job(s) wait for another tool on their node</b>${listed(coordination, (j) => `<li>${jobLink(j)}: ${esc(j.why)} ${waited(j.since)}</li>`)}</div>`,
    );
  }
  return out;
}

function counts(v: IncidentsView): string {
  if (!v.counts) return '<p class="muted">Counts unavailable.</p>';
  const parked = (v.parked ?? []).length;
  const chip = (state: string, n: number) => {
    const current = v.filter.state === state;
    return `<li><a href="${esc(filterQuery({ ...v.filter, before: undefined, state: current ? undefined : (state as IncidentFilter['state']) }))}"${current ? ' aria-current="true"' : ''}>${esc(state)} <b>${n}</b></a></li>`;
  };
  const c = v.counts.counts;
  return `<ul class="counts" aria-label="jobs by state">${chip('parked', parked)}${chip('waiting', c.waiting + c.prioritized)}${chip('active', c.active)}${chip('delayed', c.delayed)}${chip('failed', c.failed)}${chip('completed', c.completed)}</ul>
<p class="muted">${v.counts.queues} queue(s) counted.</p>`;
}

const STORM_STATES = ['failed', 'parked', 'active', 'waiting', 'delayed', 'completed', 'gone'] as const;

const iso = (score: number): string => new Date(Math.floor(score / 1000)).toISOString();

/** The filter that shows a storm's own rows: its runbook, from its oldest to its newest job. */
const stormRows = (s: Storm): string =>
  filterQuery({
    runbook: s.runbook as IncidentFilter['runbook'],
    since: iso(s.oldest),
    until: new Date(Math.floor(s.newest / 1000) + 1).toISOString(),
  });

/** One line per storm: runbook, how many nodes and jobs, when, counts by state; its link opens the node rows. */
function stormLines(storms: readonly Storm[] | undefined): string {
  if (!storms?.length) return '';
  const line = (s: Storm): string => {
    const open = stormRows(s);
    const chips = STORM_STATES.filter((st) => s.byState[st] > 0)
      .map((st) => `<li class="s-${st}" data-state="${st}">${st} <b>${s.byState[st]}</b></li>`)
      .join('');
    return `<tr data-storm="${esc(s.runbook)}" data-jobs="${s.jobs}" data-nodes="${s.nodes}"><td data-label="runbook"><a href="${esc(open)}">${esc(s.runbook)}</a></td>
<td data-label="scope">${s.nodes} nodes, ${s.jobs} jobs${s.mostOnOneNode > 1 ? ` (up to ${s.mostOnOneNode} on one node)` : ''}</td>
<td data-label="when">${time(iso(s.oldest))} – ${time(iso(s.newest))}</td><td data-label="states"><ul class="counts">${chips}</ul></td>
<td data-label="open"><a href="${esc(open)}">Node rows</a></td></tr>`;
  };
  return `<h2 id="storms">Storms</h2><p class="muted">Jobs of one runbook stored in one burst on many nodes, one line each; their rows are not repeated below.</p>
<table class="storms"><thead><tr><th>runbook</th><th>scope</th><th>when</th><th>by state</th><th></th></tr></thead><tbody>${storms.map(line).join('\n')}</tbody></table>`;
}

/**
 * What an empty list says. When storms took every job out of the rows, the list is not empty
 * because nothing happened: it says where the jobs are, and opens them.
 */
function noRows(f: IncidentFilter, storms: readonly Storm[] | undefined): string {
  if (f.node || f.runbook || f.state || f.mode || f.last || f.since || f.until) return '<p>No incidents match these filters.</p>';
  if (!storms?.length) return '<p>No incidents yet.</p>';
  const jobs = storms.reduce((n, s) => n + s.jobs, 0);
  if (storms.length === 1)
    return `<p class="in-storms">All ${jobs} jobs are grouped in the storm above: <a href="${esc(stormRows(storms[0]!))}">open its ${jobs} node rows</a>.</p>`;
  return `<p class="in-storms">All ${jobs} jobs are grouped in the <a href="#storms">${storms.length} storms above</a>; each line opens its node rows.</p>`;
}

function rows(items: Incident[], f: IncidentFilter, v: IncidentsView): string {
  const ctx: WaitContext = { agentOf: v.agentOf ?? (() => undefined), ...(v.pauses ? { pauses: v.pauses } : {}) };
  if (!items.length) return noRows(f, v.storms);
  return `<table class="incidents"><thead><tr><th>created</th><th>node</th><th>runbook</th><th>state</th><th>mode</th><th>outcome</th><th>summary</th></tr></thead><tbody>
${items
  .map((i) => {
    // Parked: the engine said why; not taken yet or backing off: the page says why.
    const w = i.waiting ?? whyWaiting(i, ctx);
    const outcome = w ? `waiting (${w.reason})` : (i.outcome ?? (i.state === 'failed' ? 'failed' : ''));
    return `<tr data-job="${esc(i.id)}" data-state="${esc(consoleState(i))}"${w ? ` data-waits="${esc(w.reason)}"` : ''}><td data-label="created">${time(i.createdAt)}</td>
<td data-label="node"><a href="${esc(filterQuery({ ...f, before: undefined, node: i.node === '(cluster)' ? undefined : i.node }))}">${esc(i.node)}</a>${i.recordNames ? ` <span class="tag" title="its record names node ${esc(i.recordNames)}, not its queue's">record names ${esc(i.recordNames)}</span>` : ''}</td>
<td data-label="runbook"><a href="/ui/jobs/${encodeURIComponent(i.id)}">${esc(i.runbook)}</a></td><td data-label="state">${esc(consoleState(i))}</td><td data-label="mode">${esc(i.mode ?? '')}</td>
<td data-label="outcome"><span class="o-${esc(w ? 'waiting' : (i.outcome ?? ''))}">${esc(outcome)}</span>${i.waiting?.since ? ` ${waited(i.waiting.since)}` : ''}</td>
<td data-label="summary">${esc(w?.why ?? i.summary ?? i.failedReason ?? '')}</td></tr>`;
  })
  .join('\n')}
</tbody></table>`;
}

/** An instant as a datetime-local field shows it (UTC, to the minute); a value it cannot show stays empty. */
const localValue = (v: string | undefined): string => {
  if (v === undefined) return '';
  const ms = instantMs(v);
  return Number.isNaN(ms) ? '' : new Date(ms).toISOString().slice(0, 16);
};

function filtersForm(f: IncidentFilter): string {
  const select = (name: string, label: string, values: readonly string[], current: string | undefined) =>
    `<label>${esc(label)}<select name="${esc(name)}"><option value="">any</option>${values.map((v) => `<option${v === current ? ' selected' : ''}>${esc(v)}</option>`).join('')}</select></label>`;
  return `<form class="filters" method="get" action="/ui/" role="search" aria-label="filter incidents">
<label>node<input name="node" value="${esc(f.node ?? '')}" size="18" autocomplete="off"></label>
${select('runbook', 'runbook', RUNBOOKS, f.runbook)}${select('state', 'state', CONSOLE_STATES, f.state)}${select('mode', 'mode', ['dry-run', 'enforce'], f.mode)}
<label>last${`<select name="last"><option value="">any time</option>${Object.keys(LAST_WINDOWS)
    .map((w) => `<option value="${esc(w)}"${w === f.last ? ' selected' : ''}>${esc(w)}</option>`)
    .join('')}</select>`}</label>
<label>since (UTC)<input name="since" type="datetime-local" value="${esc(localValue(f.since))}"></label><label>until (UTC)<input name="until" type="datetime-local" value="${esc(localValue(f.until))}"></label>
<button type="submit">Filter</button> <a href="/ui/">clear</a></form>`;
}

/** Pause switches wider than a node: the whole cluster, or one runbook everywhere (confirmed). */
function pauseSwitches(v: IncidentsView, ctx: PageCtx): string {
  if (!v.pauses) return '';
  const free = RUNBOOKS.filter((r) => !v.pauses?.runbooks[r]);
  const cluster = v.pauses.cluster
    ? ''
    : actionForm(ctx, {
        action: 'pause',
        id: 'pause-cluster',
        url: '/ui/pause',
        label: 'Pause the cluster',
        confirm: 'Pause everything: no job takes a step until resumed',
        back: v.self,
      });
  const runbook = free.length
    ? actionForm(ctx, {
        action: 'pause',
        id: 'pause-runbook',
        url: '/ui/pause',
        label: 'Pause runbook',
        choose: { name: 'runbook', label: 'Runbook', options: free },
        confirm: 'Pause this runbook on every node',
        back: v.self,
      })
    : '';
  return cluster || runbook ? `<details class="switches" id="pause-switches"><summary>Pause switches</summary>${cluster}${runbook}</details>` : '';
}

export function incidentsPage(v: IncidentsView, ctx: PageCtx): string {
  const f = v.filter;
  const pager = `<div class="pager">${f.before ? `<a href="${esc(filterQuery({ ...f, before: undefined }))}">newest</a>` : ''}${v.page.next !== undefined ? `<a href="${esc(filterQuery({ ...f, before: v.page.next }))}">older</a>` : ''}</div>`;
  const partial = v.page.partial
    ? `<p class="muted">Looked at the ${v.page.scanned} most recent incidents${v.page.items.length ? '' : ' and found no match'}; older ones are on the next page.</p>`
    : '';
  const body = `${banners(v, ctx)}${pauseSwitches(v, ctx)}${counts(v)}${stormLines(v.storms)}<h2>${f.before ? 'Older incidents' : 'Latest incidents'}</h2>${rows(v.page.items, f, v)}${partial}${pager}`;
  // Only the first page is live: an older page is a place the operator went to on purpose.
  return layout('volume-medic: incidents', body, ctx, f.before ? undefined : v.self, `<h1>Incidents</h1>${filtersForm(f)}`);
}
