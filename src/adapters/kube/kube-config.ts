import { AppsV1Api, CoreV1Api, EventsV1Api, KubeConfig, StorageV1Api } from '@kubernetes/client-node';
import { inCluster } from '../../core/config/in-cluster.ts';
import { KubeConfigError } from './config-error.ts';

// How volume-medic reaches the API server: the pod's service account when it runs in a pod
// (KUBERNETES_SERVICE_HOST is set), the usual kubeconfig otherwise (KUBECONFIG, which may list
// several files, else ~/.kube/config). loadFromDefault quietly falls back to
// http://localhost:8080 when it finds nothing; that is refused here, so a missing kubeconfig is a
// clear start-up error instead of a watch that retries forever against nothing.

type Env = Readonly<Record<string, string | undefined>>;

export function loadKubeConfig(env: Env = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (inCluster(env)) {
    kc.loadFromCluster();
    return kc;
  }
  kc.loadFromDefault();
  const cluster = kc.getCurrentCluster();
  if (!cluster || (cluster.name === 'cluster' && cluster.server === 'http://localhost:8080' && kc.getCurrentUser()?.name === 'user')) {
    throw new KubeConfigError('no Kubernetes access: not in a pod (KUBERNETES_SERVICE_HOST unset) and no kubeconfig found (KUBECONFIG or ~/.kube/config)');
  }
  return kc;
}

export interface KubeClients {
  config: KubeConfig;
  core: CoreV1Api;
  storage: StorageV1Api;
  apps: AppsV1Api;
  events: EventsV1Api;
}

export function kubeClients(config: KubeConfig): KubeClients {
  return {
    config,
    core: config.makeApiClient(CoreV1Api),
    storage: config.makeApiClient(StorageV1Api),
    apps: config.makeApiClient(AppsV1Api),
    events: config.makeApiClient(EventsV1Api),
  };
}

/**
 * A KubeConfig for one API server URL and token (tests, `kubectl proxy`-style setups). The client
 * refuses plain http unless skipTLSVerify is set, so it is set for http URLs only.
 */
export function kubeConfigFor(server: string, token = 'unused'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: server.startsWith('http://') }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}
