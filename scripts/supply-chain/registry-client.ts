// A small client of the OCI distribution API (https://github.com/opencontainers/distribution-spec)
// for what skopeo and helm do not do: pushing attachments (signatures, referrers) by hand and
// reading them back. Anonymous access only; `insecure` picks plain HTTP (a loopback test registry).
import { createHash } from 'node:crypto';

export const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  imageConfig: 'application/vnd.oci.image.config.v1+json',
  empty: 'application/vnd.oci.empty.v1+json',
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  annotations?: Record<string, string>;
}

export interface Manifest {
  schemaVersion: 2;
  mediaType: string;
  artifactType?: string;
  config: Descriptor;
  layers: Descriptor[];
  subject?: Descriptor;
  annotations?: Record<string, string>;
}

export interface Index {
  schemaVersion: 2;
  mediaType: typeof MEDIA.index;
  manifests: Descriptor[];
}

export const sha256 = (bytes: Uint8Array | string) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** A registry host and a repository in it, e.g. 127.0.0.1:5000 and volume-medic/volume-medic. */
export interface RepoRef {
  host: string;
  repo: string;
  insecure?: boolean;
}

/** `host/repo` with optional `:tag` or `@digest` into its parts. */
export function parseRepo(ref: string, insecure = false): RepoRef & { tag?: string; digest?: string } {
  const at = ref.indexOf('@');
  const digest = at >= 0 ? ref.slice(at + 1) : undefined;
  let rest = at >= 0 ? ref.slice(0, at) : ref;
  const slash = rest.indexOf('/');
  if (slash < 0) throw new Error(`${ref}: expected <host>/<repository>`);
  const colon = rest.lastIndexOf(':');
  const tag = colon > slash ? rest.slice(colon + 1) : undefined;
  if (tag !== undefined) rest = rest.slice(0, colon);
  return { host: rest.slice(0, slash), repo: rest.slice(slash + 1), insecure, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

const base = (r: RepoRef) => `${r.insecure ? 'http' : 'https'}://${r.host}/v2/${r.repo}`;

async function must(res: Response, what: string): Promise<Response> {
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${(await res.text()).slice(0, 500)}`);
  return res;
}

export async function pushBlob(r: RepoRef, bytes: Uint8Array, mediaType: string): Promise<Descriptor> {
  const digest = sha256(bytes);
  const head = await fetch(`${base(r)}/blobs/${digest}`, { method: 'HEAD' });
  if (!head.ok) {
    const start = await must(await fetch(`${base(r)}/blobs/uploads/`, { method: 'POST' }), `start an upload to ${r.host}/${r.repo}`);
    const location = new URL(start.headers.get('location') ?? '', `${r.insecure ? 'http' : 'https'}://${r.host}`);
    location.searchParams.set('digest', digest);
    await must(
      await fetch(location, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream' } }),
      `upload ${digest} to ${r.host}/${r.repo}`,
    );
  }
  return { mediaType, digest, size: bytes.length };
}

export const jsonBytes = (v: unknown) => Buffer.from(JSON.stringify(v));

/**
 * PUT a manifest or index under `ref` (a tag or its own digest); returns its descriptor, and
 * whether the registry took note of a `subject` (an OCI-Subject header: it serves referrers).
 */
export async function pushManifest(r: RepoRef, value: Manifest | Index, ref?: string): Promise<Descriptor & { subjectAccepted: boolean }> {
  const bytes = jsonBytes(value);
  const digest = sha256(bytes);
  const res = await must(
    await fetch(`${base(r)}/manifests/${ref ?? digest}`, { method: 'PUT', body: bytes, headers: { 'content-type': value.mediaType } }),
    `push a manifest to ${r.host}/${r.repo}:${ref ?? digest}`,
  );
  return { mediaType: value.mediaType, digest, size: bytes.length, subjectAccepted: res.headers.get('oci-subject') === digest };
}

export interface Fetched {
  bytes: Buffer;
  mediaType: string;
  digest: string;
}

/** A manifest or index by tag or digest, or undefined when the registry has none (404). */
export async function getManifest(r: RepoRef, ref: string): Promise<Fetched | undefined> {
  const res = await fetch(`${base(r)}/manifests/${ref}`, {
    headers: { accept: [MEDIA.manifest, MEDIA.index, 'application/vnd.docker.distribution.manifest.v2+json'].join(', ') },
  });
  if (res.status === 404) return undefined;
  await must(res, `get the manifest ${r.host}/${r.repo}:${ref}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  const digest = sha256(bytes);
  // A registry could answer with other bytes than asked for; a digest reference pins them.
  if (ref.startsWith('sha256:') && digest !== ref) throw new Error(`${r.host}/${r.repo}@${ref}: the registry served bytes of ${digest}`);
  return { bytes, mediaType: res.headers.get('content-type') ?? '', digest };
}

export async function getBlob(r: RepoRef, digest: string): Promise<Buffer> {
  const res = await must(await fetch(`${base(r)}/blobs/${digest}`), `get the blob ${r.host}/${r.repo}@${digest}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  if (sha256(bytes) !== digest) throw new Error(`${r.host}/${r.repo}@${digest}: the blob's bytes have another digest`);
  return bytes;
}

/** The manifest's descriptor (media type, digest, size) as a subject or index entry names it. */
export async function describe(r: RepoRef, ref: string): Promise<Descriptor> {
  const m = await getManifest(r, ref);
  if (!m) throw new Error(`${r.host}/${r.repo}:${ref} does not exist`);
  return { mediaType: m.mediaType.split(';')[0]!.trim(), digest: m.digest, size: m.bytes.length };
}
