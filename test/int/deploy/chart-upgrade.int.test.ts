import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR, ChartError, DEPLOY_DIR, helmTemplate, type KObject } from '../../../scripts/deploy/chart.ts';
import { runTool } from '../../../scripts/deploy/tools.ts';

// Upgrading a release to this chart version from the previous one. There is no API server here,
// so the two ways of `helm upgrade` are rendered the way Helm computes their values (Helm's
// pkg/action/upgrade.go, reuseValues):
//   --reset-then-reuse-values: the NEW chart's defaults, then the release's own values (what the
//     operator gave at install), then this upgrade's --set: a value the new version adds renders.
//   --reuse-values: the OLD chart's values (its defaults coalesced with the release's) REPLACE the
//     new chart's defaults: a value the new version adds does not exist. The schema requires
//     records and config.coordination (new in 0.3.0; secretsJob was 0.2.0's), so such an upgrade
//     is refused, naming them, instead of rendering without them.
// (A later version that adds no required value needs its own example of what --reuse-values misses.)
// The previous version is the chart as it was in git just before Chart.yaml got this version (or
// as PUBLISHED pins it), packaged (`helm package`) like a published one.

const ROOT = join(DEPLOY_DIR, '..');
const git = (...args: string[]) => spawnSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' });
const versionOf = (text: string) => (parseYaml(text) as { version: string }).version;
const CURRENT = versionOf(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8'));
const tmp = mkdtempSync(join(tmpdir(), 'vm-chart-upgrade-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * Versions whose published chart is not the parent of the next version's bump: 0.3.0's bump came
 * after the changes it lists (issues 46, 47 and 50), so the parent of the bump is already most of
 * 0.3.0. 0.2.0 as published is the tree before issue 46's first change.
 */
const PUBLISHED: Readonly<Record<string, string>> = { '0.2.0': 'fca5a87ada3ad127dcbaba28d453ebeea14b10f8' };

/** The last commit with the chart at its previous version: the parent of the commit that set this one (or PUBLISHED's). */
function previousChartCommit(): { commit: string; version: string } | string {
  const log = git('log', '--format=%H', '--', 'deploy/charts/volume-medic/Chart.yaml');
  if (log.error) return `git cannot run here (${log.error.message})`;
  if (log.status !== 0) return `no git history here (${log.stderr.trim()})`;
  let bumped: string | undefined;
  for (const c of log.stdout.trim().split('\n')) {
    const text = git('show', `${c}:deploy/charts/volume-medic/Chart.yaml`);
    if (text.status !== 0) break;
    if (versionOf(text.stdout) !== CURRENT) break;
    bumped = c;
  }
  if (!bumped) return `Chart.yaml's version ${CURRENT} is not committed yet`;
  const parent = git('rev-parse', '--verify', '--quiet', `${bumped}^`);
  if (parent.status !== 0) return `the commit before ${bumped.slice(0, 12)} is not in this clone (shallow?)`;
  const version = versionOf(git('show', `${parent.stdout.trim()}:deploy/charts/volume-medic/Chart.yaml`).stdout);
  const published = PUBLISHED[version];
  if (published && git('cat-file', '-e', `${published}^{commit}`).status !== 0)
    return `the published ${version} (${published.slice(0, 12)}) is not in this clone`;
  return { commit: published ?? parent.stdout.trim(), version };
}

const previous = previousChartCommit();
const skip = typeof previous === 'string' ? previous : undefined;
if (skip) console.warn(`SKIPPED the upgrade tests: ${skip}`);

// The operator's own values at install (the release's config): what an upgrade carries over.
const RELEASE_VALUES = {
  config: { runbookModes: { 'residual-multipath-cleanup': 'enforce' } },
  receiver: { replicas: 3 },
  nodeAgent: { podAnnotations: { team: 'storage' } },
};

describe.skipIf(skip !== undefined)('upgrading a release of the previous chart version', { timeout: 120_000 }, () => {
  const { commit, version } = previous as { commit: string; version: string };
  let oldArchive = '';
  const releaseValues = join(tmp, 'release-values.yaml');

  beforeAll(() => {
    // The previous chart, packaged as it was published.
    const src = join(tmp, 'src');
    mkdirSync(src);
    const archive = spawnSync('sh', ['-c', `git -C "$1" archive "$2" deploy/charts/volume-medic | tar -x -C "$3"`, 'sh', ROOT, commit, src], {
      encoding: 'utf8',
    });
    expect(archive.status, archive.stderr).toBe(0);
    const r = runTool('helm', ['package', join(src, 'deploy/charts/volume-medic'), '--destination', tmp]);
    expect(r.status, r.stderr).toBe(0);
    oldArchive = join(tmp, `volume-medic-${version}.tgz`);
    writeFileSync(releaseValues, JSON.stringify(RELEASE_VALUES));
  });

  it("the previous version is an older semver, and it installs (renders) with the release's values", () => {
    expect(version).not.toBe(CURRENT);
    const [a, b] = [version, CURRENT].map((v) => v.split('.').map(Number));
    expect(a![0]! * 1e6 + a![1]! * 1e3 + a![2]!).toBeLessThan(b![0]! * 1e6 + b![1]! * 1e3 + b![2]!);
    const installed = helmTemplate({ chart: oldArchive, values: [releaseValues] });
    expect(installed.find((o) => o.kind === 'Deployment' && o.metadata.name === 'volume-medic-receiver')!['spec']).toMatchObject({
      replicas: 3,
    });
  });

  it("--reset-then-reuse-values: the new chart's defaults under the release's values render what the new version adds, and keep the operator's choices", () => {
    for (const helm of ['helm', 'helm3'] as const) {
      const upgraded = helmTemplate({ helm, values: [releaseValues], set: ['global.imageRegistry=mirror.example'] });
      // Added in 0.2.0: the secrets hook Job (secretsJob defaults) and global.imageRegistry.
      const job = upgraded.find((o) => o.kind === 'Job' && o.metadata.name === 'volume-medic-secrets');
      expect(job, helm).toBeDefined();
      expect(JSON.stringify(job)).toContain('mirror.example/volume-medic/volume-medic:');
      // Added in 0.3.0: the VolumeRemediation records' CRD (records.* defaults), the coordination settings.
      expect(
        upgraded.find((o) => o.kind === 'CustomResourceDefinition' && o.metadata.name === 'volumeremediations.volume-medic.io'),
        helm,
      ).toBeDefined();
      expect(upgraded.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'volume-medic-config')!['data']).toHaveProperty('KURED_DAEMONSET');
      // Kept from the release: its replicas, its runbook mode, its annotations.
      const receiver = upgraded.find((o) => o.kind === 'Deployment' && o.metadata.name === 'volume-medic-receiver') as KObject;
      expect(receiver['spec'], helm).toMatchObject({ replicas: 3 });
      const config = upgraded.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'volume-medic-config')!['data'] as Record<string, string>;
      expect(config['RUNBOOK_MODES']).toBe('residual-multipath-cleanup=enforce');
      const agent = upgraded.find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'volume-medic-node-agent')!['spec'] as {
        template: { metadata: { annotations: Record<string, string> } };
      };
      expect(agent.template.metadata.annotations['team']).toBe('storage');
    }
  });

  it("--reuse-values alone: the old chart's values replace the new defaults, and the new schema refuses them, naming what is missing (not a Job without limits)", () => {
    // The new chart with the previous version's values.yaml as its defaults: what Helm does.
    const reused = join(tmp, 'reused');
    cpSync(CHART_DIR, reused, { recursive: true });
    const oldValues = runTool('helm', ['show', 'values', oldArchive]);
    expect(oldValues.status, oldValues.stderr).toBe(0);
    writeFileSync(join(reused, 'values.yaml'), oldValues.stdout);
    for (const helm of ['helm', 'helm3'] as const) {
      expect(() => helmTemplate({ helm, chart: reused, values: [releaseValues] }), helm).toThrow(ChartError);
      // What 0.3.0 requires that 0.2.0's values lack: records (its CRD's values) and config.coordination.
      expect(() => helmTemplate({ helm, chart: reused, values: [releaseValues] }), helm).toThrow(/records[\s\S]*coordination|coordination[\s\S]*records/);
    }
  });
});

describe('the upgrade advice', () => {
  const docs = {
    'templates/NOTES.txt': readFileSync(join(CHART_DIR, 'templates/NOTES.txt'), 'utf8'),
    'CHANGELOG.md': readFileSync(join(CHART_DIR, 'CHANGELOG.md'), 'utf8'),
    'README.md': readFileSync(join(ROOT, 'README.md'), 'utf8'),
    'docs/install.md': readFileSync(join(ROOT, 'docs/install.md'), 'utf8'),
    'deploy/README.md': readFileSync(join(DEPLOY_DIR, 'README.md'), 'utf8'),
  };

  it('every `helm upgrade` in NOTES.txt, the READMEs and docs/install.md uses --reset-then-reuse-values', () => {
    let seen = 0;
    for (const [file, text] of Object.entries(docs)) {
      for (const m of text.matchAll(/helm upgrade [^\n]*/g)) {
        seen++;
        expect(m[0], file).toContain('--reset-then-reuse-values');
      }
    }
    expect(seen).toBeGreaterThanOrEqual(2);
  });

  it('--reuse-values alone is named only to warn against it', () => {
    for (const [file, text] of Object.entries(docs)) {
      for (const m of text.matchAll(/[^\n]{0,40}(?<!reset-then-)--reuse-values/g)) expect(m[0], file).toMatch(/never/i);
    }
  });
});
