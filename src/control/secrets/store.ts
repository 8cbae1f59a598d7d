import { KubeRestError, type KubeRest } from '../../adapters/kube/rest/transport.ts';

// The port the hook Job writes through: read one Secret or ConfigMap, create it, merge-patch it.
// One implementation over the API server (KubeRest); tests use the same against a fake API server.

export type Kind = 'Secret' | 'ConfigMap';
export interface KubeObject {
  apiVersion: 'v1';
  kind: Kind;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

export interface ObjectStore {
  get(kind: Kind, name: string): Promise<KubeObject | undefined>;
  /** false: it exists already (someone else made it first). */
  create(o: KubeObject): Promise<boolean>;
  patch(kind: Kind, name: string, patch: Record<string, unknown>): Promise<void>;
}

const plural = (k: Kind) => (k === 'Secret' ? 'secrets' : 'configmaps');

export function kubeStore(rest: KubeRest, namespace: string): ObjectStore {
  const path = (k: Kind, name?: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/${plural(k)}${name ? `/${encodeURIComponent(name)}` : ''}`;
  return {
    async get(kind, name) {
      try {
        return await rest.get<KubeObject>(path(kind, name));
      } catch (err) {
        if (err instanceof KubeRestError && err.code === 404) return undefined;
        throw err;
      }
    },
    async create(o) {
      try {
        await rest.request('POST', path(o.kind), { body: o });
        return true;
      } catch (err) {
        if (err instanceof KubeRestError && err.code === 409) return false;
        throw err;
      }
    },
    async patch(kind, name, patch) {
      await rest.request('PATCH', path(kind, name), { body: patch, contentType: 'application/merge-patch+json' });
    },
  };
}
