import { ApiKubeWrites } from '../../src/adapters/kube/api-kube-writes.ts';
import { KubeLookups } from '../../src/adapters/kube/api/kube-lookups.ts';
import { kubeAccessConfigured } from '../../src/core/config/in-cluster.ts';
import { kubeClients, loadKubeConfig } from '../../src/adapters/kube/kube-config.ts';
import { JobEventRecorder } from '../../src/adapters/kube/job-events.ts';
import { claimOfJob } from '../../src/adapters/kube/job-claims.ts';
import { InMemoryLookups } from '../../src/adapters/kube/lookups.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { type KubeWrites, NO_KUBE_WRITES } from '../kube-writes/kube-writes.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { inClusterRest } from '../../src/adapters/kube/rest/in-cluster.ts';
import { KubeRest } from '../../src/adapters/kube/rest/transport.ts';
import { inCluster } from '../../src/core/config/in-cluster.ts';
import type { KubeGet } from '../runbooks/out-of-service-taint-release/reads.ts';

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
  /** Plain GETs (out-of-service-taint-release's reads of CRDs, Leases and Events the lookups do not cover). */
  get: KubeGet;
}

const NO_GET: KubeGet = () => Promise.reject(new Error('the cluster worker has no Kubernetes API access (not in a pod, no kubeconfig)'));

/** The pod's service account in a pod; else the kubeconfig's server with its bearer token (a client-certificate user gets no reads: they fail, and the runbook refuses). */
function kubeGet(kc: KubeConfig): KubeGet {
  const rest = inCluster()
    ? inClusterRest()
    : new KubeRest({
        server: kc.getCurrentCluster()?.server ?? '',
        token: () => kc.getCurrentUser()?.token,
        ...(kc.getCurrentCluster()?.caData ? { ca: Buffer.from(kc.getCurrentCluster()?.caData ?? '', 'base64') } : {}),
      });
  return (path, query) => rest.get(path, query);
}

export function clusterKube(log: Logger): ClusterKube {
  const inCluster = kubeAccessConfigured();
  if (!inCluster) return { inCluster, lookups: new InMemoryLookups(), kube: NO_KUBE_WRITES, get: NO_GET };
  const clients = kubeClients(loadKubeConfig());
  const lookups: LookupsOf<'cluster-worker'> = new KubeLookups(clients);
  return {
    inCluster,
    lookups,
    events: new JobEventRecorder({ events: clients.events, log, claimOf: claimOfJob(lookups) }),
    kube: new ApiKubeWrites({ component: 'cluster-worker', core: clients.core, events: clients.events }),
    get: kubeGet(clients.config),
  };
}
