import type { EventsApi } from '../../src/adapters/kube/api/apis.ts';
import type { KubeApis } from '../../src/adapters/kube/api/kube-lookups.ts';
import { restApis } from '../../src/adapters/kube/rest/apis.ts';
import { inClusterRest } from '../../src/adapters/kube/rest/in-cluster.ts';
import { inCluster } from '../../src/core/config/in-cluster.ts';

// The node agent's Kubernetes access. In a pod (its DaemonSet): the small REST client of
// src/adapters/kube/rest/ with the service account, so @kubernetes/client-node's memory is never
// loaded on the nodes. With a KUBECONFIG (a developer's machine): client-node, loaded only then,
// because it understands every kubeconfig form (exec plugins, client certificates, contexts).
// Neither: undefined (labels from NODE_LABELS, attachments unknown, the RBD node half refuses).

export type AgentKubeApis = KubeApis & { events: EventsApi };

export async function agentKubeApis(env: Readonly<Record<string, string | undefined>> = process.env): Promise<AgentKubeApis | undefined> {
  if (inCluster(env)) return restApis(inClusterRest(env));
  if (env['KUBECONFIG']) {
    const { kubeClients, loadKubeConfig } = await import('../../src/adapters/kube/kube-config.ts');
    return kubeClients(loadKubeConfig(env));
  }
  return undefined;
}
