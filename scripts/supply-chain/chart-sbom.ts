// The chart's SBOM: an SPDX 2.3 document naming the chart archive (its SHA-256) and the image its
// defaults install (repository and appVersion), the one it depends on at run time. A chart
// vendors no code, so that is all it holds. Deterministic: `created` is the commit's time and
// the namespace is derived from the content, as the image's SBOM (scripts/image/sbom.ts).
import { createHash } from 'node:crypto';

export interface ChartSbomInput {
  name: string;
  version: string;
  archive: Uint8Array;
  source: string;
  revision: string;
  /** Seconds: the commit's time. */
  epoch: number;
  image: { repository: string; tag: string };
}

export function chartSbom(i: ChartSbomInput): Buffer {
  const sha = createHash('sha256').update(i.archive).digest('hex');
  const created = new Date(i.epoch * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const pkg = (id: string, name: string, version: string, purl: string, extra: Record<string, unknown> = {}) => ({
    SPDXID: id,
    name,
    versionInfo: version,
    downloadLocation: 'NOASSERTION',
    licenseConcluded: 'NOASSERTION',
    licenseDeclared: 'NOASSERTION',
    copyrightText: 'NOASSERTION',
    externalRefs: [{ referenceCategory: 'PACKAGE-MANAGER', referenceType: 'purl', referenceLocator: purl }],
    ...extra,
  });
  const packages = [
    pkg('SPDXRef-chart', i.name, i.version, `pkg:helm/${i.name}@${i.version}`, {
      downloadLocation: i.source,
      checksums: [{ algorithm: 'SHA256', checksumValue: sha }],
      filesAnalyzed: false,
    }),
    pkg(
      'SPDXRef-image',
      i.image.repository.slice(i.image.repository.lastIndexOf('/') + 1),
      i.image.tag,
      `pkg:oci/${i.image.repository.slice(i.image.repository.lastIndexOf('/') + 1)}?repository_url=${encodeURIComponent(i.image.repository)}&tag=${encodeURIComponent(i.image.tag)}`,
    ),
  ];
  const doc = {
    spdxVersion: 'SPDX-2.3',
    dataLicense: 'CC0-1.0',
    SPDXID: 'SPDXRef-DOCUMENT',
    name: `${i.name}-chart-${i.version}`,
    documentNamespace: `https://spdx.org/spdxdocs/${i.name}-chart-${i.version}-${sha}`,
    creationInfo: { created, creators: ['Tool: volume-medic scripts/release.ts'], comment: `revision ${i.revision}` },
    packages,
    relationships: [
      { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: 'SPDXRef-chart' },
      { spdxElementId: 'SPDXRef-chart', relationshipType: 'DEPENDS_ON', relatedSpdxElement: 'SPDXRef-image' },
    ],
  };
  return Buffer.from(`${JSON.stringify(doc, null, 2)}\n`);
}
