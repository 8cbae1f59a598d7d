// OCI 1.1 referrers: an artifact (an SBOM, a provenance statement) pushed as a manifest whose
// `subject` is the image (or chart) manifest and whose `artifactType` says what it is. A
// registry that implements the referrers API answers GET /v2/<repo>/referrers/<digest> and
// says so with an OCI-Subject header on the push; one that does not (the CNCF distribution
// registry 2.8, Debian's docker-registry) gets the spec's tag fallback: an image index tagged
// `sha256-<hex>` listing the referrers, which the client keeps up to date.
import { type Descriptor, getManifest, type Index, jsonBytes, type Manifest, MEDIA, pushBlob, pushManifest, type RepoRef } from './registry-client.ts';

export const fallbackTag = (digest: string) => digest.replace(':', '-');

/** Pushes `content` as an artifact referring to `subject`; returns the artifact manifest's descriptor. */
export async function attach(
  r: RepoRef,
  subject: Descriptor,
  artifact: { artifactType: string; mediaType: string; content: Uint8Array; annotations?: Record<string, string> },
): Promise<Descriptor> {
  const config = await pushBlob(r, jsonBytes({}), MEDIA.empty);
  const layer = await pushBlob(r, artifact.content, artifact.mediaType);
  const manifest: Manifest = {
    schemaVersion: 2,
    mediaType: MEDIA.manifest,
    artifactType: artifact.artifactType,
    config,
    layers: [layer],
    subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.size },
    ...(artifact.annotations ? { annotations: artifact.annotations } : {}),
  };
  const { subjectAccepted, ...pushed } = await pushManifest(r, manifest);
  const desc: Descriptor = { ...pushed, artifactType: artifact.artifactType, ...(artifact.annotations ? { annotations: artifact.annotations } : {}) };
  if (!subjectAccepted) {
    const existing = await getManifest(r, fallbackTag(subject.digest));
    const others = existing ? (JSON.parse(existing.bytes.toString('utf8')) as Index).manifests.filter((m) => m.digest !== desc.digest) : [];
    await pushManifest(r, { schemaVersion: 2, mediaType: MEDIA.index, manifests: [...others, desc] }, fallbackTag(subject.digest));
  }
  return desc;
}

/** The referrers of `digest`, from the referrers API where the registry has one, else the fallback tag. */
export async function listReferrers(r: RepoRef, digest: string, artifactType?: string): Promise<Descriptor[]> {
  const res = await fetch(`${r.insecure ? 'http' : 'https'}://${r.host}/v2/${r.repo}/referrers/${digest}`, { headers: { accept: MEDIA.index } });
  let all: Descriptor[];
  if (res.ok && (res.headers.get('content-type') ?? '').startsWith(MEDIA.index)) {
    all = ((await res.json()) as Index).manifests;
  } else {
    await res.body?.cancel();
    const idx = await getManifest(r, fallbackTag(digest));
    all = idx ? (JSON.parse(idx.bytes.toString('utf8')) as Index).manifests : [];
  }
  return artifactType ? all.filter((d) => d.artifactType === artifactType) : all;
}
