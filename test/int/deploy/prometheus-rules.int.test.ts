import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { CHART_DIR, CI_VALUES_DIR, helmTemplate } from '../../../scripts/deploy/chart.ts';
import { isExecutable } from '../../support/executable.ts';

// The chart's alerting rules (files/prometheus-rules.yaml, which its PrometheusRule wraps),
// checked by Prometheus' own promtool: `check rules`, and `test rules` on input series for every
// alert (files/prometheus-rules.test.yaml). A rule that regresses, e.g. summing a fleet-wide
// series across the receiver replicas, fails the promtool tests.

const PROMTOOL = process.env['PROMTOOL_BIN'] ?? '/usr/bin/promtool';
const available = isExecutable(PROMTOOL);

const RULES = join(CHART_DIR, 'files/prometheus-rules.yaml');
const TESTS = join(CHART_DIR, 'files/prometheus-rules.test.yaml');
const tmp = mkdtempSync(join(tmpdir(), 'vm-promtool-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const promtool = (...args: string[]) => spawnSync(PROMTOOL, args, { encoding: 'utf8', timeout: 60_000 });

interface RuleFile {
  groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
}
interface TestFile {
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
}

/** promtool test rules on a copy of the rules with one edit (the tests read prometheus-rules.yaml beside them). */
function testWith(edit: (rules: string) => string): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmp, 'mutant-'));
  writeFileSync(join(dir, 'prometheus-rules.yaml'), edit(readFileSync(RULES, 'utf8')));
  copyFileSync(TESTS, join(dir, 'prometheus-rules.test.yaml'));
  const r = promtool('test', 'rules', join(dir, 'prometheus-rules.test.yaml'));
  return { status: r.status, out: r.stdout + r.stderr };
}

describe.skipIf(!available && !process.env['CI'])('the alerting rules, with promtool', () => {
  it('promtool is installed (Debian prometheus; required in CI)', () => {
    expect(available, `${PROMTOOL} not found: .ci/run installs the Debian package prometheus`).toBe(true);
  });

  it('promtool check rules: every rule is valid', () => {
    const r = promtool('check', 'rules', RULES);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('promtool test rules: every alert fires on its input series, and its near misses do not', () => {
    const r = promtool('test', 'rules', TESTS);
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it('every alert has a test in which it fires', () => {
    const alerts = (parseYaml(readFileSync(RULES, 'utf8')) as RuleFile).groups.flatMap((g) => g.rules.flatMap((x) => x.alert ?? []));
    const fired = new Set(
      (parseYaml(readFileSync(TESTS, 'utf8')) as TestFile).tests.flatMap((t) =>
        (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname),
      ),
    );
    expect(alerts.filter((a) => !fired.has(a))).toEqual([]);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'VolumeMedicApprovalWaiting',
        'VolumeMedicBreakerTripped',
        'VolumeMedicUntrustedWorkRefused',
        'VolumeMedicJobsFailed',
        'VolumeMedicNodeAgentMissing',
        'VolumeMedicReceiverUnavailable',
        'VolumeMedicReceiverErrors',
        'VolumeMedicRedisUnreachable',
        'VolumeMedicJobsWithoutAgent',
        'VolumeMedicNodeAgentDownWithJobs',
        'VolumeMedicFleetMetricsExporter',
        'VolumeMedicClusterWorkerUnavailable',
        'VolumeMedicScrapeFailing',
        'VolumeMedicMetricsAbsent',
        'VolumeMedicCoordinationWaiting',
        'VolumeMedicRemediationInProgress',
      ]),
    );
  });

  it("the chart's PrometheusRule waits metrics.prometheusRule.approvalWaitingMinutes before the approval alert (45 in the monitoring values)", () => {
    const rule = helmTemplate({ values: [join(CI_VALUES_DIR, 'monitoring-values.yaml')], show: ['templates/monitoring.yaml'] }).find(
      (o) => o.kind === 'PrometheusRule',
    )!;
    const dir = mkdtempSync(join(tmp, 'rendered-'));
    writeFileSync(join(dir, 'rules.yaml'), stringifyYaml(rule['spec']));
    writeFileSync(
      join(dir, 'test.yaml'),
      stringifyYaml({
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              {
                series: 'volume_medic_jobs_parked{job="volume-medic",namespace="volume-medic",pod="r-a",reason="approval"}',
                values: '1x60',
              },
            ],
            alert_rule_test: [
              { eval_time: '44m', alertname: 'VolumeMedicApprovalWaiting', exp_alerts: [] },
              {
                eval_time: '46m',
                alertname: 'VolumeMedicApprovalWaiting',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'warning', job: 'volume-medic', namespace: 'volume-medic', reason: 'approval' },
                    exp_annotations: {
                      summary: '1 volume-medic job(s) have waited for approval for 45 minutes.',
                      description:
                        'High-risk steps wait for an operator: `volume-medic jobs` lists them; approve with POST /v1/jobs/<id>/approve or let them expire (APPROVAL_TTL_SECONDS).',
                    },
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const r = promtool('test', 'rules', join(dir, 'test.yaml'));
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it("a regression fails the tests: summing the replicas' fleet-wide series doubles the parked jobs", () => {
    const r = testWith((rules) =>
      rules.replace(
        'max without (instance, pod) (volume_medic_jobs_parked{reason="approval"})',
        'sum without (instance, pod) (volume_medic_jobs_parked{reason="approval"})',
      ),
    );
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/VolumeMedicApprovalWaiting/);
  });

  it('a regression fails the tests: an alert about refused work that no longer looks at the last hour', () => {
    const r = testWith((rules) => rules.replace('increase(volume_medic_untrusted_refused_total[1h])', 'increase(volume_medic_untrusted_refused_total[1m])'));
    expect(r.status).not.toBe(0);
  });

  it('a regression fails the tests: a scraped process left out of the absent() watch', () => {
    const r = testWith((rules) => rules.replace('or absent(up{job="volume-medic-cluster-worker"})', ''));
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/VolumeMedicMetricsAbsent/);
  });

  it("a regression fails the tests: a scrape-failure alert that also takes other applications' jobs", () => {
    const r = testWith((rules) =>
      rules.replace('up{job=~"volume-medic|volume-medic-node-agent|volume-medic-cluster-worker"} == 0', 'up{job=~"volume-medic.*"} == 0'),
    );
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/VolumeMedicScrapeFailing/);
  });
});
