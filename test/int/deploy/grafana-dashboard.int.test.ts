import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, CI_VALUES_DIR, helmTemplate } from '../../../scripts/deploy/chart.ts';
import { createKubeMetrics } from '../../../src/adapters/kube/kube-metrics.ts';
import { writeNoAgentRecord } from '../../../src/adapters/jobstore/no-agent-record.ts';
import { startReceiver, type Receiver } from '../../../src/control/receiver.ts';
import { testConfig } from '../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../support/redis.ts';
import { isExecutable } from '../../support/executable.ts';
import { CLUSTER_WORKER, NODE_AGENT, startWorkerProcess, type WorkerProcess } from '../../support/worker-process.ts';

// The chart's Grafana dashboard (files/grafana-dashboard.json; metrics.grafanaDashboard.enabled
// puts it in a ConfigMap for Grafana's sidecar), checked for what Grafana and Prometheus need:
// valid JSON, unique panel ids, every panel on the dashboard's data source variable, and every
// metric its PromQL names exported by the code. The names come from a real receiver's /metrics
// (its registry, the process series, and the fleet-wide series it reads from Redis, with a
// no-agent check's record written as the cluster worker writes it), a real node agent's and
// cluster worker's probe-server /metrics, and the Kubernetes watch metrics' registry, not from a
// list kept here. Every expression is parsed by promtool, and every fleet-wide series the alerting
// rules take `max without (instance, pod)` of (one receiver exports it; two while a Lease changes
// hands) is taken the same way here, never summed across replicas.

const DASHBOARD_FILE = join(CHART_DIR, 'files/grafana-dashboard.json');
const text = readFileSync(DASHBOARD_FILE, 'utf8');

interface Target {
  refId: string;
  expr: string;
  datasource?: { uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown; definition?: string }> };
}

const dashboard = JSON.parse(text) as Dashboard;
const allPanels = (ps: readonly Panel[]): Panel[] => ps.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
const panels = allPanels(dashboard.panels);
/** Every PromQL expression: the panels' targets and the template variables' queries. */
const expressions = (d: Dashboard): string[] => [
  ...allPanels(d.panels).flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
  ...d.templating.list.flatMap((v) => (v.definition ? [v.definition] : [])),
];
/** Metric names in PromQL: volume-medic's own and the process series (nothing else is scraped from it). */
const metricNames = (expr: string): string[] => [...expr.matchAll(/\b((?:volume_medic|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]!);

/** The scrape jobs an expression names (job="..." or job=~"a|b"), or undefined (any, or $job). */
function scrapeJobs(expr: string): string[] | undefined {
  const m = /\bjob=~?"([^"$]+)"/.exec(expr);
  return m ? m[1]!.split('|') : undefined;
}

const PROMTOOL = process.env['PROMTOOL_BIN'] ?? '/usr/bin/promtool';
/** Required in CI (test/int/deploy/prometheus-rules.int.test.ts says so when it is missing). */
const hasPromtool = isExecutable(PROMTOOL) || Boolean(process.env['CI']);
/** promtool check rules on recording rules of the expressions, with Grafana's variables set as Grafana would. */
function checkExpressions(exprs: readonly string[]): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'vm-dashboard-promql-'));
  try {
    const fill = (e: string): string =>
      e.replaceAll('$namespace', '.+').replaceAll('$job', '.+').replaceAll('$__rate_interval', '5m').replaceAll('$__range', '1h');
    const rules = { groups: [{ name: 'dashboard', rules: exprs.map((e, i) => ({ record: `dashboard:expr_${i}`, expr: fill(e) })) }] };
    writeFileSync(join(dir, 'rules.json'), JSON.stringify(rules));
    const r = spawnSync(PROMTOOL, ['check', 'rules', join(dir, 'rules.json')], { encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, out: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The fleet-wide series: those the alerting rules take `max without (instance, pod)` of, and the
 * other series the exporting receiver reads from Redis (no rule takes them yet).
 */
const fleetWide = new Set([
  ...[
    ...readFileSync(join(CHART_DIR, 'files/prometheus-rules.yaml'), 'utf8').matchAll(
      /max without \(instance, pod\) \((?:increase\(|rate\()?(volume_medic_[a-z_]+)/g,
    ),
  ].map((m) => m[1]!),
  'volume_medic_queue_jobs',
  'volume_medic_job_duration_seconds_bucket',
  'volume_medic_paused',
]);
/** Expressions that take a fleet-wide series other than right inside max without (instance, pod), max or min. */
function notMaxed(d: Dashboard): string[] {
  const bad: string[] = [];
  for (const e of expressions(d)) {
    for (const m of e.matchAll(/volume_medic_[a-z_]+/g)) {
      if (!fleetWide.has(m[0])) continue;
      const before = e.slice(0, m.index);
      if (!/max without \(instance, pod\) \((?:increase\(|rate\()?$/.test(before) && !/\b(?:max|min)(?: by \([^)]*\))? ?\($/.test(before)) bad.push(e);
    }
  }
  return bad;
}

const prefix = uniquePrefix('dashboard');
let receiver: Receiver;
let exported: Set<string>;
/** What each scrape job's process exports (job label as the ServiceMonitor and PodMonitors set it). */
const exportedBy = new Map<string, Set<string>>();
const workers: WorkerProcess[] = [];

/** Names a scrape can show: each metric's name, and a histogram's _bucket/_sum/_count series. */
function namesOf(exposition: string): Set<string> {
  const out = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    out.add(name);
    if (type === 'histogram' || type === 'summary') for (const s of ['_bucket', '_sum', '_count']) out.add(`${name}${s}`);
  }
  return out;
}

beforeAll(async () => {
  // The no-agent series show only while the cluster worker's check is fresh: write one, as it does.
  const redis = new Redis(redisUrl());
  await writeNoAgentRecord(redis, prefix, { jobs: 0, nodes: 0, checkedAt: Date.now() }, 60_000);
  await redis.quit();
  receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['dashboard-test-token-0123456789'] }));
  const kube = new Registry();
  createKubeMetrics(kube);
  workers.push(await startWorkerProcess(NODE_AGENT, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, NODE_NAME: 'dashboard-node' }));
  workers.push(await startWorkerProcess(CLUSTER_WORKER, { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix }));
  const scrape = async (url: string): Promise<Set<string>> => namesOf(await (await fetch(`${url}/metrics`)).text());
  exportedBy.set('volume-medic', new Set([...(await scrape(receiver.url)), ...namesOf(await kube.metrics())]));
  exportedBy.set('volume-medic-node-agent', await scrape(workers[0]!.url));
  exportedBy.set('volume-medic-cluster-worker', await scrape(workers[1]!.url));
  exported = new Set([...exportedBy.values()].flatMap((n) => [...n]));
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await receiver?.close();
  await dropPrefix(prefix);
});

describe('the Grafana dashboard', () => {
  it('is a dashboard Grafana can import: uid, title, schema version, panels laid out on the 24-column grid', () => {
    expect(dashboard.uid).toBe('volume-medic');
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(panels.length).toBeGreaterThan(0);
    for (const p of panels) {
      expect(p.title, `panel ${p.id}`).toBeTruthy();
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      expect(p.gridPos.w * p.gridPos.h, p.title).toBeGreaterThan(0);
    }
  });

  it('has unique panel ids, and unique refIds within each panel', () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      const refs = (p.targets ?? []).map((t) => t.refId);
      expect(new Set(refs).size, p.title).toBe(refs.length);
    }
  });

  it('queries through its data source variable only', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    for (const p of panels.filter((x) => x.targets)) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      for (const t of p.targets!) expect(t.datasource?.uid ?? '${datasource}', p.title).toBe('${datasource}');
    }
  });

  it('shows what on-call needs: jobs by runbook and outcome, queue depth of the top nodes, approvals, breakers, receiver latency, builds', () => {
    const all = expressions(dashboard).join('\n');
    expect(all).toMatch(/sum by \(runbook, outcome\) \(max without \(instance, pod\) \(increase\(volume_medic_jobs_finished_total/);
    expect(all).toMatch(/topk\(10, sum by \(node\) \(max without \(instance, pod\) \(volume_medic_queue_jobs/);
    expect(all).toMatch(/volume_medic_jobs_parked\{[^}]*reason="approval"/);
    expect(all).toMatch(/volume_medic_breaker_tripped/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le, route\) \(rate\(volume_medic_webhook_duration_seconds_bucket/);
    expect(all).toMatch(/volume_medic_build_info/);
  });

  it("names only metrics the code exports (from a real receiver's, node agent's and cluster worker's /metrics and the watch metrics)", () => {
    expect(exported.has('volume_medic_jobs_finished_total')).toBe(true);
    expect(exported.has('process_cpu_seconds_total')).toBe(true);
    expect(exportedBy.get('volume-medic-node-agent')?.has('volume_medic_worker_running')).toBe(true);
    const missing = new Set<string>();
    for (const e of expressions(dashboard)) {
      const names = metricNames(e);
      expect(names.length, `no metric in ${e}`).toBeGreaterThan(0);
      // An expression that names its jobs needs its metrics from each of them; else from any.
      const jobs = scrapeJobs(e);
      for (const n of names) {
        if (jobs)
          for (const j of jobs) {
            if (!exportedBy.get(j)?.has(n)) missing.add(`${n} (job ${j})`);
          }
        else if (!exported.has(n)) missing.add(n);
      }
    }
    expect([...missing]).toEqual([]);
  });

  it.skipIf(!hasPromtool)("every expression is valid PromQL (promtool check rules, Grafana's variables filled in)", () => {
    expect(checkExpressions(expressions(dashboard).filter((e) => !e.startsWith('label_values(')))).toEqual({
      status: 0,
      out: expect.stringMatching(/SUCCESS/),
    });
  });

  it.skipIf(!hasPromtool)('a broken expression would be caught by that check', () => {
    expect(checkExpressions(['sum by (runbook (volume_medic_jobs_finished_total)']).status).not.toBe(0);
  });

  it('takes max without (instance, pod) of every fleet-wide series, as the alerting rules do (a sum double counts during a Lease hand-over)', () => {
    for (const n of ['volume_medic_jobs_parked', 'volume_medic_jobs_finished_total', 'volume_medic_untrusted_refused_total'])
      expect(fleetWide.has(n), n).toBe(true);
    expect(notMaxed(dashboard)).toEqual([]);
  });

  it('a panel summing a fleet-wide series across the receivers would be caught', () => {
    const bad = JSON.parse(
      text.replace('sum by (node) (max without (instance, pod) (volume_medic_queue_jobs', 'sum by (node) ((volume_medic_queue_jobs'),
    ) as Dashboard;
    expect(notMaxed(bad)).toEqual([expect.stringContaining('volume_medic_queue_jobs')]);
  });

  it('a misspelt metric would be caught', () => {
    const bad = JSON.parse(text.replace('volume_medic_queue_jobs', 'volume_medic_queue_depth')) as Dashboard;
    expect(
      expressions(bad)
        .flatMap(metricNames)
        .filter((n) => !exported.has(n)),
    ).toEqual(['volume_medic_queue_depth']);
  });

  it("is rendered into a ConfigMap for Grafana's sidecar only when enabled, unchanged", () => {
    const objects = helmTemplate({ values: [join(CI_VALUES_DIR, 'monitoring-values.yaml')], show: ['templates/monitoring.yaml'] });
    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'volume-medic-grafana-dashboard');
    const meta = cm?.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined;
    expect(meta?.labels?.['grafana_dashboard']).toBe('1');
    expect(meta?.annotations?.['grafana_folder']).toBe('Storage');
    expect(JSON.parse((cm!['data'] as Record<string, string>)['volume-medic.json']!)).toEqual(dashboard);
    expect(helmTemplate({}).some((o) => o.metadata.name === 'volume-medic-grafana-dashboard')).toBe(false);
  });
});
