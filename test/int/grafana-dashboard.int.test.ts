import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, CI_VALUES_DIR, helmTemplate } from '../../scripts/deploy/chart.ts';
import { createKubeMetrics } from '../../src/kube/kube-metrics.ts';
import { writeNoAgentRecord } from '../../src/queues/no-agent-record.ts';
import { startReceiver, type Receiver } from '../../src/receiver.ts';
import { testConfig } from '../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../support/redis.ts';

// The chart's Grafana dashboard (files/grafana-dashboard.json; metrics.grafanaDashboard.enabled
// puts it in a ConfigMap for Grafana's sidecar), checked for what Grafana and Prometheus need:
// valid JSON, unique panel ids, every panel on the dashboard's data source variable, and every
// metric its PromQL names exported by the code. The names come from a real receiver's /metrics
// (its registry, the process series, and the fleet-wide series it reads from Redis, with a
// no-agent check's record written as the cluster worker writes it) and the
// Kubernetes watch metrics' registry, not from a list kept here.

const DASHBOARD_FILE = join(CHART_DIR, 'files/grafana-dashboard.json');
const text = readFileSync(DASHBOARD_FILE, 'utf8');

interface Target { refId: string; expr: string; datasource?: { uid?: string } }
interface Panel { id: number; type: string; title: string; datasource?: { uid?: string }; gridPos: { x: number; y: number; w: number; h: number }; targets?: Target[]; panels?: Panel[] }
interface Dashboard { uid: string; title: string; schemaVersion: number; panels: Panel[]; templating: { list: Array<{ name: string; type: string; query?: unknown; definition?: string }> } }

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

const prefix = uniquePrefix('dashboard');
let receiver: Receiver;
let exported: Set<string>;

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
  exported = new Set([...namesOf(await (await fetch(`${receiver.url}/metrics`)).text()), ...namesOf(await kube.metrics())]);
});
afterAll(async () => {
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
    expect(all).toMatch(/sum by \(runbook, outcome\) \(increase\(volume_medic_jobs_finished_total/);
    expect(all).toMatch(/topk\(10, sum by \(node\) \(volume_medic_queue_jobs/);
    expect(all).toMatch(/volume_medic_jobs_parked\{[^}]*reason="approval"/);
    expect(all).toMatch(/volume_medic_breaker_tripped/);
    expect(all).toMatch(/histogram_quantile\(0\.99, sum by \(le, route\) \(rate\(volume_medic_webhook_duration_seconds_bucket/);
    expect(all).toMatch(/volume_medic_build_info/);
  });

  it('names only metrics the code exports (from a real receiver\'s /metrics and the watch metrics)', () => {
    expect(exported.has('volume_medic_jobs_finished_total')).toBe(true);
    expect(exported.has('process_cpu_seconds_total')).toBe(true);
    const missing = new Set<string>();
    for (const e of expressions(dashboard)) {
      const names = metricNames(e);
      expect(names.length, `no metric in ${e}`).toBeGreaterThan(0);
      for (const n of names) if (!exported.has(n)) missing.add(n);
    }
    expect([...missing]).toEqual([]);
  });

  it('a misspelt metric would be caught', () => {
    const bad = JSON.parse(text.replace('volume_medic_queue_jobs', 'volume_medic_queue_depth')) as Dashboard;
    expect(expressions(bad).flatMap(metricNames).filter((n) => !exported.has(n))).toEqual(['volume_medic_queue_depth']);
  });

  it('is rendered into a ConfigMap for Grafana\'s sidecar only when enabled, unchanged', () => {
    const objects = helmTemplate({ values: [join(CI_VALUES_DIR, 'monitoring-values.yaml')], show: ['templates/monitoring.yaml'] });
    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'volume-medic-grafana-dashboard');
    const meta = cm?.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined;
    expect(meta?.labels?.['grafana_dashboard']).toBe('1');
    expect(meta?.annotations?.['grafana_folder']).toBe('Storage');
    expect(JSON.parse((cm!['data'] as Record<string, string>)['volume-medic.json']!)).toEqual(dashboard);
    expect(helmTemplate({}).some((o) => o.metadata.name === 'volume-medic-grafana-dashboard')).toBe(false);
  });
});
