import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A kubeconfig in `dir` for the fake API server at `server` (test/testkit/fake-kube-api.ts), for processes that take KUBECONFIG; its path. */
export function writeKubeconfig(dir: string, server: string, o: { token?: string; namespace?: string } = {}): string {
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'fake',
      clusters: [{ name: 'fake', cluster: { server, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'fake', user: { token: o.token ?? 'fake-token' } }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', ...(o.namespace ? { namespace: o.namespace } : {}) } }],
    }),
  );
  return file;
}
