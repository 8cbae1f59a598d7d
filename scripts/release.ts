// `npm run release -- <registry>/<namespace> [--insecure] [--layout build/image/oci]`: build ->
// push -> sign -> attach -> verify, in one command, and print the digests an operator pins.
//
//   1. build: `npm run image` (skipped with --layout, a layout it already built);
//   2. push: the image to <registry>/<namespace>/volume-medic:<tag> (skopeo, digest preserved),
//      the chart to oci://<registry>/<namespace>/charts (helm push);
//   3. sign: a cosign signature of each digest (`sha256-<hex>.sig`; see cosign-signature.ts);
//   4. attach: the image's SPDX SBOM and SLSA v1 provenance (a DSSE envelope), the chart's SBOM
//      (scripts/supply-chain/chart-sbom.ts) and provenance, as OCI referrers of each digest, each
//      signed too;
//   5. verify: with the repository's public key, as an operator would (policy.json
//      sigstoreSigned, every blob, the attachments); a failure exits non-zero.
//
// Environment:
//   RELEASE_KEY            the cosign private key (path), e.g. from `npm run release-keys`. Required.
//   RELEASE_KEY_PASSWORD   its passphrase (cosign's COSIGN_PASSWORD). Required, may be empty.
//   RELEASE_PUBLIC_KEY     the key to verify with; default deploy/keys/cosign.pub (so a release
//                          signed with any other key fails its own verification).
//   RELEASE_BUILDER_ID     the provenance's builder.id; default <source>/scripts/release.ts.
import { spawnSync } from 'node:child_process';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { CHART_DIR } from './deploy/chart.ts';
import { buildImage, pinnedNodeVersion } from './image/build.ts';
import { chartSbom } from './supply-chain/chart-sbom.ts';
import { loadCosignPrivateKey, loadPublicKey } from './supply-chain/cosign-key.ts';
import { signDigest } from './supply-chain/cosign-signature.ts';
import { imageDependencies, slsaProvenance } from './supply-chain/provenance.ts';
import { sigstorePolicy } from './supply-chain/policy.ts';
import { attachEvidence, pushChart, pushLayout, verifyArtifact } from './supply-chain/publish.ts';
import type { RepoRef } from './supply-chain/registry-client.ts';

const REPO = fileURLToPath(new URL('../', import.meta.url));

export interface ReleaseOptions {
  /** <registry host>/<namespace>, e.g. ghcr.io/volume-medic or 127.0.0.1:5000/volume-medic. */
  target: string;
  insecure: boolean;
  /** A layout `npm run image` built; without it, one is built into build/image. */
  layout?: string;
  privateKeyPem: string;
  passphrase: string;
  publicKeyPem: string;
  builderId?: string;
}

export interface Released {
  image: RepoRef & { tag: string; digest: string };
  chart: RepoRef & { version: string; digest: string };
}

interface ImageConfig {
  config: { Labels: Record<string, string> };
}

function readLayout(layout: string): { tag: string; digest: string; labels: Record<string, string> } {
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string; annotations: Record<string, string> }[] };
  const entry = index.manifests[0]!;
  const blob = (d: string) => JSON.parse(readFileSync(join(layout, 'blobs/sha256', d.slice(7)), 'utf8')) as unknown;
  const manifest = blob(entry.digest) as { config: { digest: string } };
  return {
    tag: entry.annotations['org.opencontainers.image.ref.name']!,
    digest: entry.digest,
    labels: (blob(manifest.config.digest) as ImageConfig).config.Labels,
  };
}

function workingTreeRevision(): string {
  const git = (args: string[]) => {
    const r = spawnSync('git', args, { cwd: REPO, encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const dirty = git(['status', '--porcelain', '--untracked-files=normal', '--', 'deploy/charts']) !== '';
  return `${git(['rev-parse', 'HEAD'])}${dirty ? '-dirty' : ''}`;
}

export async function release(o: ReleaseOptions, log: (line: string) => void = () => {}): Promise<Released> {
  const key = loadCosignPrivateKey(o.privateKeyPem, o.passphrase);
  const publicKey = loadPublicKey(o.publicKeyPem);
  // Before anything is pushed: a release signed with another key would only fail its own check.
  const spki = (k: KeyObject) => k.export({ format: 'der', type: 'spki' });
  if (!spki(createPublicKey(key)).equals(spki(publicKey)))
    throw new Error('the signing key (RELEASE_KEY) is not the private half of the public key to verify with');
  const slash = o.target.indexOf('/');
  if (slash < 0) throw new Error(`${o.target}: expected <registry host>/<namespace>`);
  const host = o.target.slice(0, slash);
  const ns = o.target.slice(slash + 1).replace(/\/$/, '');

  log('build');
  const layout = o.layout ? resolve(o.layout) : (await buildImage(join(REPO, 'build/image'))).layout;
  const { tag, digest, labels } = readLayout(layout);
  const sbom = readFileSync(join(dirname(layout), `volume-medic-${tag}.spdx.json`));
  const source = labels['org.opencontainers.image.source']!;
  const revision = labels['org.opencontainers.image.revision']!;
  const builderId = o.builderId ?? `${source}/scripts/release.ts`;

  log(`push image ${host}/${ns}/volume-medic:${tag}`);
  const image = { host, repo: `${ns}/volume-medic`, insecure: o.insecure };
  pushLayout(layout, tag, image);
  log(`push chart oci://${host}/${ns}/charts`);
  const chartPushed = pushChart(CHART_DIR, host, `${ns}/charts`, o.insecure);
  const chart = { host, repo: `${ns}/charts/volume-medic`, insecure: o.insecure };

  log('sign');
  await signDigest(image, digest, key);
  await signDigest(chart, chartPushed.digest, key);

  log('attach');
  const imageProvenance = slsaProvenance({
    subject: { name: `${host}/${image.repo}`, digest },
    buildType: `${source}/scripts/image/build.ts@v1`,
    source,
    revision,
    buildCommand: ['npm', 'run', 'image'],
    builderId,
    dependencies: imageDependencies(REPO, JSON.parse(sbom.toString('utf8')) as { packages: [] }, pinnedNodeVersion()),
  });
  await attachEvidence(image, digest, { sbom, provenance: imageProvenance }, key);
  const chartProvenance = slsaProvenance({
    subject: { name: `${host}/${chart.repo}`, digest: chartPushed.digest },
    buildType: `${source}/scripts/release.ts#chart@v1`,
    source,
    // The chart is packaged now, from the working tree (the image may come from an earlier build).
    revision: workingTreeRevision(),
    buildCommand: ['helm', 'package', 'deploy/charts/volume-medic'],
    builderId,
    dependencies: [],
    externalParameters: { chartVersion: chartPushed.version },
  });
  const chartValues = parseYaml(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as { image: { repository: string; tag: string } };
  const chartMeta = parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { name: string; version: string; appVersion: string };
  const chartSbomBytes = chartSbom({
    name: chartMeta.name,
    version: chartMeta.version,
    archive: chartPushed.archive,
    source,
    revision: workingTreeRevision(),
    epoch: Number(spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: REPO, encoding: 'utf8' }).stdout.trim()),
    image: { repository: chartValues.image.repository, tag: chartValues.image.tag || chartMeta.appVersion },
  });
  await attachEvidence(chart, chartPushed.digest, { sbom: chartSbomBytes, provenance: chartProvenance }, key);

  log('verify');
  const policy = sigstorePolicy(`${host}/${ns}`, { keyData: Buffer.from(o.publicKeyPem).toString('base64') });
  for (const [what, r, d] of [
    ['image', image, digest],
    ['chart', chart, chartPushed.digest],
  ] as const) {
    const v = await verifyArtifact(policy, r, d, publicKey);
    if (!v.accepted) throw new Error(`the ${what} ${r.host}/${r.repo}@${d} does not verify: ${v.reasons.join('; ')}`);
    if (!v.provenance) throw new Error(`the ${what}'s provenance is not attached or not signed by the key`);
    if (!v.sbom?.equals(what === 'image' ? sbom : chartSbomBytes)) throw new Error(`the ${what}'s SBOM is not attached or differs from the one made`);
  }
  return { image: { ...image, tag, digest }, chart: { ...chart, version: chartPushed.version, digest: chartPushed.digest } };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const target = args.find((a) => !a.startsWith('--') && args[args.indexOf(a) - 1] !== '--layout');
  const li = args.indexOf('--layout');
  const keyPath = process.env['RELEASE_KEY'];
  const passphrase = process.env['RELEASE_KEY_PASSWORD'];
  if (!target || !keyPath || passphrase === undefined || args.includes('--help')) {
    process.stderr.write(
      'usage: RELEASE_KEY=<cosign.key> RELEASE_KEY_PASSWORD=... npm run release -- <registry>/<namespace> [--insecure] [--layout build/image/oci]\n',
    );
    process.exit(2);
  }
  const publicKeyPath = process.env['RELEASE_PUBLIC_KEY'] || join(REPO, 'deploy/keys/cosign.pub');
  let r: Released;
  try {
    r = await release(
      {
        target,
        insecure: args.includes('--insecure'),
        ...(li >= 0 && args[li + 1] ? { layout: args[li + 1] } : {}),
        privateKeyPem: readFileSync(keyPath, 'utf8'),
        passphrase,
        publicKeyPem: readFileSync(publicKeyPath, 'utf8'),
        ...(process.env['RELEASE_BUILDER_ID'] ? { builderId: process.env['RELEASE_BUILDER_ID'] } : {}),
      },
      (step) => process.stderr.write(`release: ${step}\n`),
    );
  } catch (err) {
    process.stderr.write(`release: ${(err as Error).message}\n`);
    process.exit(1);
  }
  process.stdout.write(
    [
      `image  ${r.image.host}/${r.image.repo}@${r.image.digest}   (tag ${r.image.tag}; chart value image.digest=${r.image.digest})`,
      `chart  oci://${r.chart.host}/${r.chart.repo}@${r.chart.digest}   (version ${r.chart.version})`,
      `verified with ${publicKeyPath}: signatures, every blob, SBOM and SLSA provenance attached as signed referrers`,
      '',
    ].join('\n'),
  );
}
