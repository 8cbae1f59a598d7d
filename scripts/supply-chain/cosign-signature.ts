// Sigstore "simple signing" signatures as cosign writes them and containers/image (skopeo,
// podman) reads them with `use-sigstore-attachments`: an OCI manifest tagged
// `sha256-<hex of the signed digest>.sig` in the signed artifact's repository, one layer per
// signature whose blob is the JSON payload below and whose annotation
// `dev.cosignproject.cosign/signature` is the base64 ECDSA-SHA256 signature of that blob.
// skopeo signs images this way at copy time; this module signs what skopeo cannot copy (the
// chart's OCI artifact, the referrers) and verifies any of them, so `cosign verify --key` and a
// policy.json `sigstoreSigned` requirement accept the same signatures.
import { type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { type Descriptor, getBlob, getManifest, jsonBytes, type Manifest, MEDIA, pushBlob, pushManifest, type RepoRef } from './registry-client.ts';

export const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
const SIGNATURE_TYPE = 'cosign container image signature';

export const signatureTag = (digest: string) => `${digest.replace(':', '-')}.sig`;

const Payload = z.object({
  critical: z.object({
    identity: z.object({ 'docker-reference': z.string() }),
    image: z.object({ 'docker-manifest-digest': z.string() }),
    type: z.literal(SIGNATURE_TYPE),
  }),
  optional: z.record(z.string(), z.unknown()).nullable().optional(),
});

/** The payload cosign signs: the digest and the repository (no tag) it was pushed to. */
export const simpleSigningPayload = (dockerReference: string, digest: string) =>
  jsonBytes({
    critical: { identity: { 'docker-reference': dockerReference }, image: { 'docker-manifest-digest': digest }, type: SIGNATURE_TYPE },
    optional: null,
  });

async function existingSignatures(r: RepoRef, digest: string): Promise<Manifest | undefined> {
  const m = await getManifest(r, signatureTag(digest));
  return m ? (JSON.parse(m.bytes.toString('utf8')) as Manifest) : undefined;
}

/** Signs `digest` in repository `r` and pushes the signature beside any already there. */
export async function signDigest(r: RepoRef, digest: string, key: KeyObject): Promise<void> {
  const payload = simpleSigningPayload(`${r.host}/${r.repo}`, digest);
  const signature = sign('sha256', payload, key).toString('base64');
  const layer = { ...(await pushBlob(r, payload, SIMPLE_SIGNING)), annotations: { [SIGNATURE_ANNOTATION]: signature } };
  const layers = [...((await existingSignatures(r, digest))?.layers ?? []).filter((l) => l.digest !== layer.digest), layer];
  const config = await pushBlob(
    r,
    jsonBytes({ architecture: '', os: '', config: {}, rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) } }),
    MEDIA.imageConfig,
  );
  await pushManifest(r, { schemaVersion: 2, mediaType: MEDIA.manifest, config, layers }, signatureTag(digest));
}

/** `host[:port]/repo[:tag][@digest]` without its tag and digest. */
export function repositoryOf(ref: string): string {
  const noDigest = ref.split('@')[0]!;
  return noDigest.lastIndexOf(':') > noDigest.lastIndexOf('/') ? noDigest.slice(0, noDigest.lastIndexOf(':')) : noDigest;
}

export interface Verdict {
  ok: boolean;
  /** Why each signature found was refused; empty when none was found. */
  reasons: string[];
}

/**
 * Whether `digest` in `r` carries a signature by `key` whose payload names this digest and the
 * repository `identity` (by default `r`'s own: containers/image's matchRepoDigestOrExact for a
 * digest reference).
 */
export async function verifyDigest(r: RepoRef, digest: string, key: KeyObject, identity = `${r.host}/${r.repo}`): Promise<Verdict> {
  const sigs = await existingSignatures(r, digest);
  if (!sigs) return { ok: false, reasons: [`no signature (${r.host}/${r.repo}:${signatureTag(digest)} does not exist)`] };
  const reasons: string[] = [];
  for (const l of sigs.layers.filter((x: Descriptor) => x.mediaType === SIMPLE_SIGNING)) {
    const payload = await getBlob(r, l.digest);
    const sig = l.annotations?.[SIGNATURE_ANNOTATION];
    if (!sig || !verify('sha256', payload, key, Buffer.from(sig, 'base64'))) {
      reasons.push(`${l.digest}: not signed by this key`);
      continue;
    }
    const p = Payload.safeParse(JSON.parse(payload.toString('utf8')));
    if (!p.success) reasons.push(`${l.digest}: not a simple-signing payload`);
    else if (p.data.critical.image['docker-manifest-digest'] !== digest) reasons.push(`${l.digest}: signs ${p.data.critical.image['docker-manifest-digest']}`);
    else if (repositoryOf(p.data.critical.identity['docker-reference']) !== identity)
      reasons.push(`${l.digest}: signed for ${p.data.critical.identity['docker-reference']}`);
    else return { ok: true, reasons: [] };
  }
  return { ok: false, reasons: reasons.length ? reasons : ['the signature manifest has no simple-signing layer'] };
}
