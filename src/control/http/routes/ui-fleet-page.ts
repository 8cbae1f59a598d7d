import { FLEET_SORTS, fleetDir, type FleetPage, type FleetQuery, type FleetRow, type FleetSort } from '../../console/fleet.ts';
import { esc, layout, time, waited, type PageCtx } from './ui-pages.ts';
import type { PlaceholderList } from '../../console/placeholder-list.ts';

// The fleet overview: which nodes have open incidents, how deep each node's queue is, where an
// agent is missing (jobs wait and no worker has checked the queue), which breakers are tripped
// and which nodes are paused. Sorted and paged on the server (a page of rows, whatever the
// fleet's size); every column header is a link that sorts by it, a second click reverses.

export const fleetQuery = (q: Partial<FleetQuery>): string => {
  const u = new URLSearchParams();
  if (q.sort && q.sort !== 'open') u.set('sort', q.sort);
  if (q.dir) u.set('dir', q.dir);
  if (q.show && q.show !== 'open') u.set('show', q.show);
  if (q.offset) u.set('offset', String(q.offset));
  if (q.limit && q.limit !== 50) u.set('limit', String(q.limit));
  const s = u.toString();
  return s ? `/ui/fleet?${s}` : '/ui/fleet';
};

const LABEL: Record<FleetSort, string> = {
  node: 'node',
  open: 'open jobs',
  depth: 'queue depth',
  active: 'active',
  parked: 'parked',
  failed: 'failed',
  agent: 'agent',
  breaker: 'breaker',
};
const AGENT: Record<FleetRow['agent'], string> = { seen: 'seen', missing: 'MISSING', idle: 'not seen (idle)', 'no queue': 'no queue' };

function header(q: FleetQuery): string {
  const dir = fleetDir(q);
  return FLEET_SORTS.map((s) => {
    const current = q.sort === s;
    const next = current ? (dir === 'asc' ? 'desc' : 'asc') : undefined;
    const sort = current ? ` aria-sort="${dir === 'asc' ? 'ascending' : 'descending'}"` : '';
    return `<th scope="col"${sort}><a href="${esc(fleetQuery({ ...q, sort: s, dir: next, offset: 0 }))}">${esc(LABEL[s])}${current ? (dir === 'asc' ? ' ▲' : ' ▼') : ''}</a></th>`;
  }).join('');
}

function row(r: FleetRow): string {
  const node = encodeURIComponent(r.node);
  return `<tr data-node="${esc(r.node)}" data-agent="${esc(r.agent)}"><td data-label="node"><a href="/ui/?node=${node}">${esc(r.node)}</a>${r.paused ? ` <span class="tag">paused by ${esc(r.paused.by)}</span>` : ''}</td>
<td data-label="open jobs">${r.open}</td><td data-label="queue depth">${r.depth}</td><td data-label="active">${r.active}</td>
<td data-label="parked">${r.parked ? `<a href="/ui/?node=${node}&amp;state=parked">${r.parked}</a>` : '0'}</td>
<td data-label="failed">${r.failed ? `<a href="/ui/?node=${node}&amp;state=failed">${r.failed}</a>` : '0'}</td>
<td data-label="agent"><span class="${r.agent === 'missing' ? 'o-failed' : r.agent === 'seen' ? 'o-succeeded' : 'muted'}">${esc(AGENT[r.agent])}</span></td>
<td data-label="breaker">${r.breaker ? `<span class="o-failed" title="${esc(r.breaker.why)}">tripped</span> ${time(r.breaker.at)}` : 'closed'}</td></tr>`;
}

/** The Local PV placeholders the agents report attached (they block an uninstall: docs/uninstall.md); undefined: not read. */
function placeholdersHtml(l: PlaceholderList | undefined): string {
  if (!l) return '<section id="placeholders"><h2>Local PV placeholders</h2><p class="muted">Could not read the agents\' reports.</p></section>';
  const problems = [
    ...l.unreadable.map((u) => `<li>node ${esc(u.node)}: placeholder record ${esc(u.file)} cannot be read</li>`),
    ...l.invalid.map((i) => `<li>node ${esc(i.node)}: placeholders unknown: ${esc(i.why)}</li>`),
  ];
  const rows = l.placeholders.map(
    (r) =>
      `<tr data-pv="${esc(r.pv)}"><td data-label="node"><a href="/ui/?node=${encodeURIComponent(r.node)}">${esc(r.node)}</a></td><td data-label="PV">${esc(r.pv)}</td><td data-label="path"><code>${esc(r.path)}</code></td><td data-label="loop device">/dev/${esc(r.loop)}${r.attached === false ? ' (detached)' : ''}</td><td data-label="since">${time(r.since)}</td><td data-label="disk back">${r.diskBack ? 'yes' : 'no'}</td><td data-label="held by">${r.heldBy === null ? '<span class="muted">not read</span>' : esc(r.heldBy.join('; ') || '-')}</td></tr>`,
  );
  const table = rows.length
    ? `<table class="cards"><thead><tr><th scope="col">node</th><th scope="col">PV</th><th scope="col">path</th><th scope="col">loop device</th><th scope="col">since</th><th scope="col">disk back</th><th scope="col">held by</th></tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`
    : '<p>No placeholder attached on any node that reports.</p>';
  return `<section id="placeholders"><h2>Local PV placeholders</h2>${table}${problems.length ? `<ul class="o-failed">${problems.join('')}</ul>` : ''}${rows.length + problems.length ? '<p class="muted">An uninstall now would strand them: run <code>volume-medic prepare-uninstall</code> first.</p>' : ''}</section>`;
}

export function fleetPageHtml(p: FleetPage, self: string, ctx: PageCtx, placeholders?: PlaceholderList): string {
  const q = p.query;
  const banners: string[] = [];
  if (p.clusterPaused)
    banners.push(`<div class="banner bad" role="alert"><b>Paused cluster-wide</b> by ${esc(p.clusterPaused.by)} ${waited(p.clusterPaused.at)}.</div>`);
  for (const t of p.clusterBreakers)
    banners.push(`<div class="banner bad" role="alert"><b>Breaker ${esc(t.breaker)} tripped</b> ${waited(t.at)}: ${esc(t.why)}</div>`);
  if (p.agentsMissing)
    banners.push(
      `<div class="banner bad" role="alert"><b>${p.agentsMissing} node(s) with jobs and no agent</b>: no worker has checked their queue within its stalled interval. <a href="${esc(fleetQuery({ sort: 'agent' }))}">show them first</a></div>`,
    );
  const cq = p.clusterQueue;
  const cluster = cq
    ? `<p>Cluster queue: ${cq.open} open, ${cq.depth} waiting to start, ${cq.active} active, ${cq.failed} failed; cluster worker <span class="${cq.agent === 'missing' ? 'o-failed' : 'muted'}">${esc(AGENT[cq.agent])}</span>.</p>`
    : '';
  const first = p.total ? q.offset + 1 : 0;
  const last = Math.min(q.offset + q.limit, p.total);
  const pager = `<nav class="pager" aria-label="pages">${q.offset > 0 ? `<a href="${esc(fleetQuery({ ...q, offset: 0 }))}">first</a><a href="${esc(fleetQuery({ ...q, offset: Math.max(0, q.offset - q.limit) }))}" rel="prev">previous</a>` : ''}${last < p.total ? `<a href="${esc(fleetQuery({ ...q, offset: q.offset + q.limit }))}" rel="next">next</a>` : ''}</nav>`;
  const table = p.rows.length
    ? `<table class="fleet cards"><thead><tr>${header(q)}</tr></thead><tbody>\n${p.rows.map(row).join('\n')}\n</tbody></table>`
    : `<p>${q.show === 'open' ? 'No node has anything open.' : 'No nodes yet.'}</p>`;
  const show =
    q.show === 'open'
      ? `<a href="${esc(fleetQuery({ ...q, show: 'all', offset: 0 }))}">show all ${p.nodes} nodes</a>`
      : `<a href="${esc(fleetQuery({ ...q, show: 'open', offset: 0 }))}">only the ${p.nodesWithOpen} with something open</a>`;
  const body = `${banners.join('\n')}<p class="summary">${p.nodesWithOpen} of ${p.nodes} node(s) with something open; ${p.agentsMissing} agent(s) missing. ${show}</p>${cluster}
<p class="muted">Rows ${first}–${last} of ${p.total}. Counts from one scan of every queue, a few seconds old at most.</p>${table}${pager}${placeholdersHtml(placeholders)}`;
  return layout('volume-medic: fleet', body, ctx, self, '<h1>Fleet</h1>');
}
