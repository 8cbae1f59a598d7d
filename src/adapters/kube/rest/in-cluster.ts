import { readFileSync } from 'node:fs';
import { inCluster } from '../../../core/config/in-cluster.ts';
import { KubeConfigError } from '../config-error.ts';
import { KubeRest } from './transport.ts';

// In a pod: the API server from KUBERNETES_SERVICE_HOST/PORT, the service account's token and CA
// from the projected volume. Bound tokens rotate (the kubelet refreshes the file), so the token is
// read again once a minute, as client-go does.

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_TTL_MS = 60_000;

type Env = Readonly<Record<string, string | undefined>>;

export function inClusterRest(env: Env = process.env, dir = SERVICE_ACCOUNT_DIR, now: () => number = Date.now): KubeRest {
  if (!inCluster(env)) throw new KubeConfigError('not in a pod: KUBERNETES_SERVICE_HOST is not set');
  const host = env['KUBERNETES_SERVICE_HOST'] ?? '';
  const port = env['KUBERNETES_SERVICE_PORT'] || '443';
  let ca: Buffer;
  try {
    ca = readFileSync(`${dir}/ca.crt`);
  } catch (err) {
    throw new KubeConfigError(`in a pod but no service account CA at ${dir}/ca.crt: ${(err as Error).message} (is automountServiceAccountToken off?)`);
  }
  let token: string | undefined;
  let readAt = -Infinity;
  const currentToken = (): string | undefined => {
    if (now() - readAt >= TOKEN_TTL_MS) {
      try {
        token = readFileSync(`${dir}/token`, 'utf8').trim();
        readAt = now();
      } catch {
        // Keep the last token; the request fails with 401 if it is no longer valid.
      }
    }
    return token;
  };
  if (currentToken() === undefined) throw new KubeConfigError(`in a pod but no service account token at ${dir}/token`);
  return new KubeRest({ server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, token: currentToken, ca });
}
