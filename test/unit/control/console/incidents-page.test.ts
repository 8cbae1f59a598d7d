import { describe, expect, it } from 'vitest';
import { incidentsPage, type IncidentsView } from '../../../../src/control/http/routes/ui-incidents-page.ts';
import type { Storm } from '../../../../src/control/console/storms.ts';

const ctx = { csrf: 'csrf', username: 'alice' };
const MS = 1000; // index scores are ms * 1000
const storm = (runbook: string, jobs: number, newestMs: number): Storm => ({
  runbook,
  newest: newestMs * MS,
  oldest: (newestMs - 60_000) * MS,
  jobs,
  nodes: jobs,
  mostOnOneNode: 1,
  byState: { completed: 0, failed: 0, parked: 0, delayed: 0, active: 0, waiting: jobs, gone: 0 },
  members: new Set(),
});
const view = (v: Partial<IncidentsView>): IncidentsView => ({
  filter: {},
  page: { items: [], scanned: 0, partial: false },
  self: '/ui/',
  pauses: { nodes: {}, runbooks: {} },
  tripped: [],
  parked: [],
  ...v,
});
const listText = (html: string): string => html.slice(html.indexOf('Latest incidents')).replace(/<[^>]+>/g, '');

describe('the incidents page when storms hold every job', () => {
  it('says where the jobs are, not that nothing happened, and links to the storm’s node rows', () => {
    const html = incidentsPage(view({ storms: [storm('residual-multipath-cleanup', 1000, Date.parse('2026-12-07T03:00:00Z'))] }), ctx);
    expect(listText(html)).not.toContain('No incidents yet');
    expect(listText(html)).toContain('All 1000 jobs are grouped in the storm above: open its 1000 node rows.');
    const href = (re: RegExp): string | undefined => re.exec(html)?.[1]?.replace(/&#38;/g, '&');
    const link = href(/<p class="in-storms">[^<]*<a href="([^"]+)"/);
    expect(link).toBe('/ui/?runbook=residual-multipath-cleanup&since=2026-12-07T02%3A59%3A00.000Z&until=2026-12-07T03%3A00%3A00.001Z');
    // The same rows the storm line's own link opens.
    expect(link).toBe(href(/<td data-label="open"><a href="([^"]+)"/));
  });

  it('with several storms, counts all their jobs and points at the storm lines', () => {
    const html = incidentsPage(view({ storms: [storm('residual-multipath-cleanup', 300, 2_000_000), storm('rbd-stale-mapping', 40, 1_000_000)] }), ctx);
    expect(listText(html)).toContain('All 340 jobs are grouped in the 2 storms above; each line opens its node rows.');
    expect(html).toContain('<h2 id="storms">Storms</h2>');
    expect(html).toContain('<a href="#storms">');
  });

  it('still says "No incidents yet" when there are no jobs at all, and names the filters when they match nothing', () => {
    expect(listText(incidentsPage(view({}), ctx))).toContain('No incidents yet.');
    expect(listText(incidentsPage(view({ filter: { node: 'worker-1' } }), ctx))).toContain('No incidents match these filters.');
  });
});

describe('the incidents page when jobs wait for another tool on their node', () => {
  it('lists each one with whom it waits for (kured, a drain, medik8s, or unknown), as the job says', () => {
    const parked = (jobId: string, node: string, why: string) => ({
      jobId,
      queue: `node-${node}`,
      runbook: 'residual-multipath-cleanup',
      node,
      reason: 'coordination' as const,
      why,
      since: '2026-12-07T12:00:00Z',
    });
    const html = incidentsPage(
      view({
        parked: [
          parked('j1', 'worker-1', 'waiting for kured (holds the reboot lock for worker-1: weave.works/kured-node-lock on daemonset kube-system/kured)'),
          parked('j2', 'worker-2', 'waiting for drain (worker-2 is cordoned and 1 pod(s) on it are terminating: shop/db-0)'),
        ],
      }),
      ctx,
    );
    const text = html.replace(/<[^>]+>/g, '');
    expect(text).toContain('2 job(s) wait for another tool on their node');
    expect(text).toContain('residual-multipath-cleanup on worker-1: waiting for kured (holds the reboot lock for worker-1: ');
    expect(text).toContain('residual-multipath-cleanup on worker-2: waiting for drain (worker-2 is cordoned and 1 pod(s) on it are terminating: shop/db-0)');
    expect(html).toContain('href="/ui/jobs/j1"');
  });
});
