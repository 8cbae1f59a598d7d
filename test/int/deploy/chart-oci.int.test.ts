import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR, helmTemplate, helmTemplateText, type KObject } from '../../../scripts/deploy/chart.ts';
import { runTool } from '../../../scripts/deploy/tools.ts';
import { registryGet, registryUnavailable, startOciRegistry, type OciRegistry } from '../../support/oci-registry.ts';
import { podSpec } from '../../support/manifests.ts';

// Published and installed by digest: the chart packaged and pushed to an OCI registry (a real
// one, Debian's docker-registry on loopback), then rendered from there by version and by the
// digest `helm push` printed, with Helm 4 and Helm 3; with image.digest set, every volume-medic
// container runs the image by digest (through a mirror too, global.imageRegistry).

const unavailable = registryUnavailable();
if (unavailable) console.warn(`SKIPPED the OCI registry tests: ${unavailable}`);
const VERSION = (parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string }).version;
const IMAGE_DIGEST = `sha256:${'5e'.repeat(32)}`;

describe.skipIf(unavailable !== undefined)('the chart in an OCI registry', { timeout: 120_000 }, () => {
  let reg: OciRegistry;
  let chartDigest = '';
  const tmp = mkdtempSync(join(tmpdir(), 'vm-chart-oci-'));
  // Each helm its own HOME: no registry login or cache of an operator's, none shared between runs.
  const home = (helm: string) => join(tmp, `home-${helm}`);
  const ref = () => `oci://${reg.host}/charts/volume-medic`;

  beforeAll(async () => {
    reg = await startOciRegistry();
    const pkg = runTool('helm', ['package', CHART_DIR, '--destination', tmp]);
    expect(pkg.status, pkg.stderr).toBe(0);
    const push = runTool('helm', ['push', join(tmp, `volume-medic-${VERSION}.tgz`), `oci://${reg.host}/charts`, '--plain-http'], {
      home: home('helm'),
    });
    expect(push.status, `${push.stdout}${push.stderr}\n${reg.log()}`).toBe(0);
    const out = push.stdout + push.stderr;
    expect(out).toContain(`Pushed: ${reg.host}/charts/volume-medic:${VERSION}`);
    chartDigest = /Digest: (sha256:[0-9a-f]{64})/.exec(out)?.[1] ?? '';
    expect(chartDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
  afterAll(async () => {
    await reg?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("the registry serves the chart's manifest under its version, with the digest helm push printed", async () => {
    const r = await registryGet(`${reg.url}/v2/charts/volume-medic/manifests/${VERSION}`, {
      Accept: 'application/vnd.oci.image.manifest.v1+json',
    });
    expect(r.status).toBe(200);
    expect(r.headers['docker-content-digest']).toBe(chartDigest);
    expect(JSON.parse(r.body)).toMatchObject({ config: { mediaType: 'application/vnd.cncf.helm.config.v1+json' } });
  });

  it.each(['helm', 'helm3'] as const)('%s renders it from the registry by version and by digest, the same as the chart directory', (helm) => {
    const local = helmTemplateText({ helm, set: [`image.digest=${IMAGE_DIGEST}`] });
    const byVersion = helmTemplateText({
      helm,
      chart: ref(),
      version: VERSION,
      extra: ['--plain-http'],
      home: home(helm),
      set: [`image.digest=${IMAGE_DIGEST}`],
    });
    const byDigest = helmTemplateText({
      helm,
      chart: `${ref()}@${chartDigest}`,
      extra: ['--plain-http'],
      home: home(helm),
      set: [`image.digest=${IMAGE_DIGEST}`],
    });
    expect(byVersion).toBe(local);
    expect(byDigest).toBe(local);
    // A digest the registry does not have is refused, not resolved to something else.
    expect(() => helmTemplateText({ helm, chart: `${ref()}@sha256:${'0'.repeat(64)}`, extra: ['--plain-http'], home: home(helm) })).toThrow(/not found/);
  });

  it('helm pull by digest fetches the very archive that was pushed', () => {
    const dest = join(tmp, 'pulled');
    mkdirSync(dest);
    const r = runTool('helm', ['pull', `${ref()}@${chartDigest}`, '--plain-http', '--destination', dest], { home: home('helm') });
    expect(r.status, r.stderr).toBe(0);
    const [file] = readdirSync(dest);
    expect(readFileSync(join(dest, file!))).toEqual(readFileSync(join(tmp, `volume-medic-${VERSION}.tgz`)));
  });

  it('with image.digest every volume-medic container runs the image by digest, from a mirror too (global.imageRegistry)', () => {
    const images = (objects: KObject[]) => objects.flatMap((o) => (podSpec(o)?.containers ?? []).map((c) => ({ pod: o.metadata.name, image: c.image! })));
    const direct = images(helmTemplate({ chart: ref(), version: VERSION, extra: ['--plain-http'], home: home('helm'), set: [`image.digest=${IMAGE_DIGEST}`] }));
    const ours = direct.filter((i) => i.pod !== 'volume-medic-redis');
    expect(ours.map((i) => i.pod).sort()).toEqual([
      'volume-medic-cluster-worker',
      'volume-medic-node-agent',
      'volume-medic-receiver',
      'volume-medic-secrets',
      'volume-medic-uninstall-check',
    ]);
    for (const i of ours) expect(i.image, i.pod).toBe(`ghcr.io/volume-medic/volume-medic@${IMAGE_DIGEST}`);
    const mirrored = images(
      helmTemplate({
        chart: `${ref()}@${chartDigest}`,
        extra: ['--plain-http'],
        home: home('helm'),
        set: [`image.digest=${IMAGE_DIGEST}`, `global.imageRegistry=${reg.host}`],
      }),
    );
    for (const i of mirrored) {
      expect(i.image, i.pod).toBe(i.pod === 'volume-medic-redis' ? `${reg.host}/library/redis:7.4` : `${reg.host}/volume-medic/volume-medic@${IMAGE_DIGEST}`);
    }
  });
});
