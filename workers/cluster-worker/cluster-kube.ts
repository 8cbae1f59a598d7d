import { ApiKubeWrites } from '../../src/adapters/kube/api-kube-writes.ts';
import { KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { kubeAccessConfigured } from '../../src/core/config/in-cluster.ts';
import { kubeClients, loadKubeConfig } from '../../src/adapters/kube/kube-config.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import { InMemoryLookups } from '../../src/adapters/kube/lookups.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { type KubeWrites, NO_KUBE_WRITES } from '../kube-writes/kube-writes.ts';

// What the cluster worker learns from the API server, in a pod (or with KUBECONFIG): which node
// holds an image, and where its jobs' Events go. Without cluster access no watcher maps to a
// node, so a gone node's watcher is only ever fenced by policy.

export interface ClusterKube {
  inCluster: boolean;
  /** Only the lookups src/adapters/kube/rbac.ts lists for the cluster worker (its role grants no more). */
  lookups: LookupsOf<'cluster-worker'>;
  events?: JobEventRecorder;
  /** Writes to the Kubernetes API (the out-of-service taint removed, a step's Event); NO_KUBE_WRITES without cluster access. */
  kube: KubeWrites;
}

export function clusterKube(log: Logger): ClusterKube {
  const inCluster = kubeAccessConfigured();
  if (!inCluster) return { inCluster, lookups: new InMemoryLookups(), kube: NO_KUBE_WRITES };
  const clients = kubeClients(loadKubeConfig());
  return {
    inCluster,
    lookups: new KubeLookups(clients),
    events: new JobEventRecorder({ events: clients.events, log }),
    kube: new ApiKubeWrites({ component: 'cluster-worker', core: clients.core, events: clients.events }),
  };
}
