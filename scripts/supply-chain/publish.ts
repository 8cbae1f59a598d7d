// The steps of a release, each usable alone (scripts/release.ts runs them in order; the image
// tier's test runs them against a local registry and then tries to get around them):
// push the image layout (skopeo, digests preserved) and the chart (helm push), sign both,
// attach the SBOM and the SLSA provenance as signed referrers, and verify it all back.
import { spawnSync } from 'node:child_process';
import type { KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool } from '../deploy/tools.ts';
import { signDigest, verifyDigest } from './cosign-signature.ts';
import { DSSE_MEDIA, IN_TOTO, openEnvelope, signEnvelope } from './dsse.ts';
import { evaluate, type Policy } from './policy.ts';
import type { Statement } from './provenance.ts';
import { attach, listReferrers } from './referrers.ts';
import { type Descriptor, describe, getBlob, getManifest, type Manifest, type RepoRef } from './registry-client.ts';

export const SPDX_JSON = 'application/spdx+json';
export const PREDICATE_ANNOTATION = 'in-toto.io/predicate-type';

/** skopeo copy of an OCI layout to `dest:tag`, failing rather than changing the manifest digest. */
export function pushLayout(layout: string, tag: string, dest: RepoRef): void {
  const r = spawnSync(
    'skopeo',
    ['copy', '--quiet', '--preserve-digests', `--dest-tls-verify=${!dest.insecure}`, `oci:${layout}:${tag}`, `docker://${dest.host}/${dest.repo}:${tag}`],
    { encoding: 'utf8', timeout: 600_000 },
  );
  if (r.status !== 0) throw new Error(`skopeo copy to ${dest.host}/${dest.repo}:${tag} failed: ${r.stderr || r.error?.message}`);
}

/** `helm package` and `helm push` of the chart to `oci://<host>/<namespace>`; the pushed digest and the archive. */
export function pushChart(chartDir: string, host: string, namespace: string, insecure: boolean): { digest: string; archive: Buffer; version: string } {
  const tmp = mkdtempSync(join(tmpdir(), 'vm-release-chart-'));
  try {
    const pkg = runTool('helm', ['package', chartDir, '--destination', tmp]);
    if (pkg.status !== 0) throw new Error(`helm package: ${pkg.stderr}`);
    const file = /Successfully packaged chart and saved it to: (\S+)/.exec(pkg.stdout)?.[1];
    if (!file) throw new Error(`helm package said: ${pkg.stdout}`);
    const push = runTool('helm', ['push', file, `oci://${host}/${namespace}`, ...(insecure ? ['--plain-http'] : [])], { home: join(tmp, 'home') });
    const out = push.stdout + push.stderr;
    const digest = /Digest: (sha256:[0-9a-f]{64})/.exec(out)?.[1];
    if (push.status !== 0 || !digest) throw new Error(`helm push: ${out}`);
    return { digest, archive: readFileSync(file), version: /Pushed: \S+:(\S+)/.exec(out)?.[1] ?? '' };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export interface Evidence {
  sbom?: Uint8Array;
  provenance: Statement;
}

/** Attaches the SBOM and the provenance (a DSSE envelope) to `digest` and signs each attachment. */
export async function attachEvidence(r: RepoRef, digest: string, evidence: Evidence, key: KeyObject): Promise<Descriptor[]> {
  const subject = await describe(r, digest);
  const out: Descriptor[] = [];
  if (evidence.sbom) out.push(await attach(r, subject, { artifactType: SPDX_JSON, mediaType: SPDX_JSON, content: evidence.sbom }));
  const envelope = Buffer.from(JSON.stringify(signEnvelope(evidence.provenance, key)));
  out.push(
    await attach(r, subject, {
      artifactType: IN_TOTO,
      mediaType: DSSE_MEDIA,
      content: envelope,
      annotations: { [PREDICATE_ANNOTATION]: evidence.provenance.predicateType },
    }),
  );
  for (const d of out) await signDigest(r, d.digest, key);
  return out;
}

/** Fetches every blob the manifest names; a blob whose bytes do not match its digest throws. */
export async function pullCheck(r: RepoRef, digest: string): Promise<void> {
  const m = await getManifest(r, digest);
  if (!m) throw new Error(`${r.host}/${r.repo}@${digest} does not exist`);
  const manifest = JSON.parse(m.bytes.toString('utf8')) as Manifest;
  for (const d of [manifest.config, ...manifest.layers]) await getBlob(r, d.digest);
}

export interface Verified {
  accepted: boolean;
  reasons: string[];
  /** The signed attachments, fetched back: the SBOM's bytes and the provenance statement. */
  sbom?: Buffer;
  provenance?: Statement;
  referrers: Descriptor[];
}

/**
 * What an operator's check does, in order: the policy accepts the digest (its signature), every
 * blob is what the manifest says, and each referrer is signed by `key` too (a referrer that is
 * not is ignored, as cosign ignores unsigned attestations).
 */
export async function verifyArtifact(policy: Policy, r: RepoRef, digest: string, key: KeyObject): Promise<Verified> {
  const decision = await evaluate(policy, r, digest);
  if (!decision.accepted) return { accepted: false, reasons: decision.reasons, referrers: [] };
  try {
    await pullCheck(r, digest);
  } catch (err) {
    return { accepted: false, reasons: [(err as Error).message], referrers: [] };
  }
  const referrers = await listReferrers(r, digest);
  const result: Verified = { accepted: true, reasons: [], referrers };
  for (const d of referrers) {
    if (!(await verifyDigest(r, d.digest, key)).ok) continue;
    const m = JSON.parse((await getManifest(r, d.digest))!.bytes.toString('utf8')) as Manifest;
    if (m.subject?.digest !== digest || !m.layers[0]) continue;
    const blob = await getBlob(r, m.layers[0].digest);
    if (d.artifactType === SPDX_JSON) result.sbom = blob;
    if (d.artifactType === IN_TOTO) {
      const statement = openEnvelope(JSON.parse(blob.toString('utf8')), key) as Statement | undefined;
      if (statement?.subject.some((s) => `sha256:${s.digest['sha256']}` === digest)) result.provenance = statement;
    }
  }
  return result;
}
