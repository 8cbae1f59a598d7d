import type { ClusterWorkerConfig } from '../../src/core/config/schema.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import type { JobEnqueue } from '../../src/core/jobs/job-store.ts';
import { createRealHost } from '../host/real-host.ts';
import { createRbdStaleMapping } from '../runbooks/rbd-stale-mapping/handler.ts';
import { rbdLookups } from '../runbooks/rbd-stale-mapping/rbd-lookups.ts';
import type { RunbookRegistry } from '../engine/registry.ts';
import type { KubeWrites } from '../kube-writes/kube-writes.ts';

// The runbooks of the cluster worker: the cluster-side steps that need Ceph credentials or the
// whole cluster's view. They hand node-side work to the node's own queue through the dispatcher.

export interface ClusterRegistryDeps {
  /** Only the lookups src/adapters/kube/rbac.ts lists for the cluster worker (its role grants no more). */
  lookups: LookupsOf<'cluster-worker'>;
  dispatcher: Pick<JobEnqueue, 'enqueue'>;
  /** Writes to the Kubernetes API for the runbooks that change the cluster (clusterKube: NO_KUBE_WRITES without cluster access). */
  kube?: KubeWrites;
}

export function defaultClusterRegistry(config: ClusterWorkerConfig, deps: ClusterRegistryDeps): RunbookRegistry {
  return {
    'rbd-stale-mapping': createRbdStaleMapping({
      host: createRealHost(),
      ceph: {
        ...(config.cephConf ? { conf: config.cephConf } : {}),
        ...(config.cephKeyring ? { keyring: config.cephKeyring } : {}),
        ...(config.cephId ? { id: config.cephId } : {}),
      },
      lookups: rbdLookups(deps.lookups, () => deps.lookups.persistentVolumes()),
      nodeJobs: {
        enqueue: async (job) => {
          const [e] = await deps.dispatcher.enqueue([job]);
          if (!e) throw new Error(`the node job ${job.key} was not stored`);
          return { queue: e.queue, deduplicated: e.deduplicated };
        },
      },
      stateDir: config.stateDir,
      policy: {
        fencing: config.rbdFencing,
        blocklistExpirySeconds: config.rbdBlocklistExpirySeconds,
        fenceNotReadySeconds: config.rbdFenceNotReadySeconds,
        fenceCidrs: config.rbdFenceCidrs,
        handoffVerifyMs: config.rbdHandoffVerifySeconds * 1000,
      },
    }),
  };
}
