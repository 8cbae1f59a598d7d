import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR, helmTemplate, renderSet, VALUE_SETS, valuesFile, type KObject } from '../../../scripts/deploy/chart.ts';
import { runTool } from '../../../scripts/deploy/tools.ts';
import { CONTROL_PLANE, find, podSpec, schedulableOn, type TestNode } from '../../support/manifests.ts';
import { validateAll } from '../../testkit/k8s-schema.ts';

// Operators run Helm 3 as well as Helm 4, and the two differ where it hurts: Helm 3.17 refused
// `redis.external.ackReplicas: null` against the schema ("ackReplicas is required") where Helm 4
// took it. Both lint (strictly), render and package the chart with every values set CI uses
// (ci/<name>-values.yaml and deploy/volume-medic.yaml's), and both render the same workloads and
// keep the control plane off the agent's nodes. About 45 helm runs of ~0.5 s each.

const SETS = [...VALUE_SETS, 'static'] as const;
const HELMS = ['helm3', 'helm'] as const;
const tmp = mkdtempSync(join(tmpdir(), 'vm-helm-versions-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const CHART_VERSION = (parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string }).version;

describe.each(HELMS)('%s', { timeout: 120_000 }, (helm) => {
  it('is the Helm major version it is named for', () => {
    const r = runTool(helm, ['version', '--short']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(helm === 'helm3' ? /^v3\.1[7-9]\./ : /^v4\./);
  });

  it('lints the chart strictly with its defaults and with every CI values set', () => {
    const failures: string[] = [];
    for (const set of ['defaults-of-the-chart', ...SETS]) {
      const args = ['lint', '--strict', CHART_DIR, '--namespace', 'volume-medic'];
      if (set !== 'defaults-of-the-chart') args.push('--values', valuesFile(set));
      const r = runTool(helm, args);
      if (r.status !== 0 || !/1 chart\(s\) linted, 0 chart\(s\) failed/.test(r.stdout)) failures.push(`${set}: ${r.stdout}${r.stderr}`);
    }
    expect(failures).toEqual([]);
  });

  it('renders every CI values set', () => {
    for (const set of SETS) expect(renderSet(set, helm).length, set).toBeGreaterThan(10);
  });

  it("keeps the receiver, cluster worker, bundled Redis and secrets Job off the agent's nodes by default (required node affinity), and not with placement.avoidAgentNodes=false", () => {
    const agentNode: TestNode = { name: 'storage-1', labels: { 'kubernetes.io/os': 'linux', 'volume-medic.io/node-agent': 'enabled' } };
    const plainNode: TestNode = { name: 'worker-1', labels: { 'kubernetes.io/os': 'linux' } };
    const want = [{ matchExpressions: [{ key: 'volume-medic.io/node-agent', operator: 'NotIn', values: ['enabled'] }] }];
    for (const [set, avoid] of [
      [[], true],
      [['placement.avoidAgentNodes=false'], false],
    ] as const) {
      const objects = helmTemplate({ helm, set });
      expect(schedulableOn(podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))!, agentNode)).toBe(true);
      for (const [kind, name] of CONTROL_PLANE) {
        const spec = podSpec(find(objects, kind, name))!;
        const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
        expect(terms, `${name} ${set.join(' ')}`).toEqual(avoid ? want : undefined);
        expect(schedulableOn(spec, agentNode), `${name} on an agent's node ${set.join(' ')}`).toBe(!avoid);
        expect(schedulableOn(spec, plainNode), name).toBe(true);
      }
    }
  });

  it('renders the pre-delete uninstall check, valid for Kubernetes, with and without uninstall.allowStrandedPlaceholders', async () => {
    for (const set of [[], ['uninstall.allowStrandedPlaceholders=true'], ['receiver.tls.mode=off', 'networkPolicy.enabled=false']]) {
      const objects = helmTemplate({ helm, set });
      const hook = objects.filter((o) => o.metadata.name === 'volume-medic-uninstall-check');
      expect(hook.map((o) => o.kind).sort(), set.join(' ')).toEqual(
        ['ClusterRole', 'ClusterRoleBinding', 'Job', 'ServiceAccount', ...(set.includes('networkPolicy.enabled=false') ? [] : ['NetworkPolicy'])].sort(),
      );
      for (const o of hook) expect((o.metadata['annotations'] as Record<string, string>)['helm.sh/hook']).toBe('pre-delete');
      expect(await validateAll(hook)).toEqual([]);
      const args = podSpec(find(objects, 'Job', 'volume-medic-uninstall-check'))!.containers[0]!.args ?? [];
      expect(args.includes('--allow-stranded')).toBe(set.includes('uninstall.allowStrandedPlaceholders=true'));
      expect(args[1]).toBe(set.includes('receiver.tls.mode=off') ? 'http://volume-medic.volume-medic.svc:8080' : 'https://volume-medic.volume-medic.svc:8080');
    }
  });

  it('renders no uninstall check with uninstall.checkJob.enabled=false (the static manifest: kubectl runs no hooks)', () => {
    expect(helmTemplate({ helm, set: ['uninstall.checkJob.enabled=false'] }).filter((o) => o.metadata.name === 'volume-medic-uninstall-check')).toEqual([]);
  });

  it('packages the chart, and the archive renders', () => {
    const dest = join(tmp, helm);
    const r = runTool(helm, ['package', CHART_DIR, '--destination', dest]);
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(dest)).toEqual([`volume-medic-${CHART_VERSION}.tgz`]);
    expect(helmTemplate({ helm, chart: join(dest, `volume-medic-${CHART_VERSION}.tgz`) }).length).toBeGreaterThan(10);
  });
});

describe('Helm 3 and Helm 4', { timeout: 120_000 }, () => {
  it('render the same objects with every CI values set (names, and every workload whole)', () => {
    const workloads = (objects: KObject[]) => objects.filter((o) => ['Deployment', 'DaemonSet', 'StatefulSet'].includes(o.kind));
    const names = (objects: KObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    for (const set of SETS) {
      const [three, four] = [renderSet(set, 'helm3'), renderSet(set, 'helm')];
      expect(names(three), set).toEqual(names(four));
      expect(workloads(three), set).toEqual(workloads(four));
    }
  });
});
