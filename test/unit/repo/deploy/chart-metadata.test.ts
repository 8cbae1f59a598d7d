import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR } from '../../../../scripts/deploy/chart.ts';

// Chart.yaml is what Artifact Hub and `helm search` show: semver versions, the images the
// defaults run, the license, links, and what changed (the newest section of CHANGELOG.md).

type Chart = { version: string; appVersion: string; annotations: Record<string, string> };
const chart = parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as Chart;
const values = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as {
  image: { repository: string; tag: string };
  redis: { bundled: { image: { repository: string; tag: string } } };
};
const changelog = readFileSync(join(CHART_DIR, 'CHANGELOG.md'), 'utf8');
// semver.org's own pattern.
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;
const annotation = <T>(key: string): T => parseYaml(chart.annotations[key] ?? 'null') as T;

describe('Chart.yaml', () => {
  it('has semver version and appVersion', () => {
    expect(chart.version).toMatch(SEMVER);
    expect(chart.appVersion).toMatch(SEMVER);
  });

  it('lists for Artifact Hub exactly the images the defaults run', () => {
    const images = annotation<Array<{ name: string; image: string }>>('artifacthub.io/images');
    expect(images).toEqual([
      { name: 'volume-medic', image: `${values.image.repository}:${values.image.tag || chart.appVersion}` },
      { name: 'redis', image: `${values.redis.bundled.image.repository}:${values.redis.bundled.image.tag}` },
    ]);
  });

  it('names the license of package.json and links with URLs', () => {
    const pkg = JSON.parse(readFileSync(join(CHART_DIR, '../../../package.json'), 'utf8')) as { license: string };
    expect(chart.annotations['artifacthub.io/license']).toBe(pkg.license);
    const links = annotation<Array<{ name: string; url: string }>>('artifacthub.io/links');
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(l.url, l.name).toMatch(/^https:\/\//);
  });

  it("says what changed in Artifact Hub's kinds, one entry per bullet of the newest CHANGELOG.md section, which is this version", () => {
    const changes = annotation<Array<{ kind: string; description: string }>>('artifacthub.io/changes');
    for (const c of changes) {
      expect(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security']).toContain(c.kind);
      expect(c.description.length).toBeGreaterThan(10);
    }
    const sections = changelog.split(/^## /m).slice(1);
    expect(sections[0]!.split('\n')[0]!.trim()).toBe(chart.version);
    const bullets = sections[0]!.split('\n').filter((l) => l.startsWith('- '));
    expect(bullets.map((b) => /^- (\w+):/.exec(b)?.[1]?.toLowerCase())).toEqual(changes.map((c) => c.kind));
  });
});
