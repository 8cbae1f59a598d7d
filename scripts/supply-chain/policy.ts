// The containers-policy.json(5) an operator gives skopeo or podman, read and applied by the
// project itself for the `docker` transport: Debian's skopeo 1.9.3 is built with sigstore
// disabled ("Debian-local change: sigstore disabled", for signing and for a `sigstoreSigned`
// requirement alike), so CI cannot lean on it; upstream skopeo and podman read the same file. Supported: `reject`, `insecureAcceptAnything` and `sigstoreSigned` (keyPath or keyData;
// signedIdentity matchRepoDigestOrExact, the default, matchRepository, exactRepository); the
// scope is looked up as containers/image does (the reference, its repository, each parent
// namespace, the host, then the transport's "" and the global default).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { loadPublicKey } from './cosign-key.ts';
import { verifyDigest } from './cosign-signature.ts';
import type { RepoRef } from './registry-client.ts';

const Identity = z.discriminatedUnion('type', [
  z.object({ type: z.literal('matchRepoDigestOrExact') }),
  z.object({ type: z.literal('matchRepository') }),
  z.object({ type: z.literal('exactRepository'), dockerRepository: z.string() }),
]);
const Requirement = z.discriminatedUnion('type', [
  z.object({ type: z.literal('reject') }),
  z.object({ type: z.literal('insecureAcceptAnything') }),
  z.object({ type: z.literal('sigstoreSigned'), keyPath: z.string().optional(), keyData: z.string().optional(), signedIdentity: Identity.optional() }),
]);
export const Policy = z.object({
  default: z.array(Requirement).min(1),
  transports: z.record(z.string(), z.record(z.string(), z.array(Requirement).min(1))).optional(),
});
export type Policy = z.infer<typeof Policy>;

export const readPolicy = (path: string): Policy => Policy.parse(JSON.parse(readFileSync(path, 'utf8')));

/**
 * The policy that admits only images in `scope` (a host or host/namespace) signed by one key (a
 * file, or the PEM base64-encoded as policy.json's keyData), in the repository they are in.
 */
export const sigstorePolicy = (scope: string, key: { keyPath: string } | { keyData: string }): Policy => ({
  default: [{ type: 'reject' }],
  transports: { docker: { [scope]: [{ type: 'sigstoreSigned', ...key, signedIdentity: { type: 'matchRepository' } }] } },
});

/** registries.d(5) content that makes skopeo/podman read and write cosign's `.sig` attachments. */
export const REGISTRIES_D = 'default-docker:\n  use-sigstore-attachments: true\n';

function requirementsFor(policy: Policy, r: RepoRef): z.infer<typeof Requirement>[] {
  const docker = policy.transports?.['docker'] ?? {};
  const parts = r.repo.split('/');
  const scopes = [...parts.map((_, i) => `${r.host}/${parts.slice(0, parts.length - i).join('/')}`), r.host];
  for (const s of scopes) if (docker[s]) return docker[s];
  return docker[''] ?? policy.default;
}

export interface Decision {
  accepted: boolean;
  reasons: string[];
}

/** Whether `digest` in `r` (a digest reference, as a chart pins it) is accepted by `policy`. */
export async function evaluate(policy: Policy, r: RepoRef, digest: string): Promise<Decision> {
  const reasons: string[] = [];
  for (const req of requirementsFor(policy, r)) {
    switch (req.type) {
      case 'insecureAcceptAnything':
        break;
      case 'reject':
        reasons.push('the policy rejects this scope');
        break;
      case 'sigstoreSigned': {
        if ((req.keyPath === undefined) === (req.keyData === undefined)) throw new Error('sigstoreSigned needs exactly one of keyPath and keyData');
        const key = loadPublicKey(req.keyPath ? readFileSync(req.keyPath, 'utf8') : Buffer.from(req.keyData!, 'base64').toString('utf8'));
        const id = req.signedIdentity ?? { type: 'matchRepoDigestOrExact' };
        // The signature names the repository it was pushed to; exactRepository asks for another.
        const signedAs = id.type === 'exactRepository' ? { ...r, ...splitRepo(id.dockerRepository) } : r;
        const v = await verifyDigest(r, digest, key, `${signedAs.host}/${signedAs.repo}`);
        if (!v.ok) reasons.push(...v.reasons);
        break;
      }
      default: {
        const never: never = req;
        throw new Error(`unknown requirement ${JSON.stringify(never)}`);
      }
    }
  }
  return { accepted: reasons.length === 0, reasons };
}

function splitRepo(ref: string): { host: string; repo: string } {
  const i = ref.indexOf('/');
  return { host: ref.slice(0, i), repo: ref.slice(i + 1) };
}
