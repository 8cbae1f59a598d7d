import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// An OCI image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md)
// written by hand: oci-layout, index.json and blobs/sha256/<hex>. The JSON is serialised with
// a fixed key order (the objects below are built in one order) and no whitespace, so the
// manifest digest depends only on the layers and the configuration.

export const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}

export class OciLayout {
  readonly dir: string;
  readonly blobs: string;
  constructor(dir: string) {
    this.dir = dir;
    this.blobs = join(dir, 'blobs', 'sha256');
    mkdirSync(this.blobs, { recursive: true });
    writeFileSync(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  }

  /** Moves a finished file into blobs/ under its digest. */
  async addFile(path: string, mediaType: string): Promise<Descriptor> {
    const digest = await sha256File(path);
    const size = statSync(path).size;
    renameSync(path, join(this.blobs, digest.slice('sha256:'.length)));
    return { mediaType, digest, size };
  }

  addJson(value: unknown, mediaType: string): Descriptor {
    const bytes = Buffer.from(JSON.stringify(value));
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    writeFileSync(join(this.blobs, digest.slice('sha256:'.length)), bytes);
    return { mediaType, digest, size: bytes.length };
  }

  /** index.json naming one manifest by `ref` (org.opencontainers.image.ref.name: skopeo's oci:<dir>:<ref>). */
  writeIndex(manifest: Descriptor, ref: string): void {
    const entry = { ...manifest, annotations: { 'org.opencontainers.image.ref.name': ref } };
    writeFileSync(join(this.dir, 'index.json'), JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests: [entry] }));
  }
}
