import type { ClusterWorkerConfig } from '../../src/core/config/schema.ts';
import type { LookupsOf } from '../../src/adapters/kube/rbac.ts';
import type { JobEnqueue } from '../../src/core/jobs/job-store.ts';
import { createRealHost } from '../host/real-host.ts';
import { createRbdStaleMapping } from '../runbooks/rbd-stale-mapping/handler.ts';
import { rbdLookups } from '../runbooks/rbd-stale-mapping/rbd-lookups.ts';
import type { RunbookRegistry } from '../engine/registry.ts';
import { NO_KUBE_WRITES, type KubeWrites } from '../kube-writes/kube-writes.ts';
import { createCephHost } from '../runbooks/rbd-stale-mapping/ceph-access.ts';
import type { BlocklistUndo } from '../runbooks/rbd-stale-mapping/blocklist-undo.ts';
import { createOutOfServiceTaintRelease } from '../runbooks/out-of-service-taint-release/handler.ts';
import { ourBlocklistOf } from '../runbooks/out-of-service-taint-release/our-blocklist.ts';
import type { KubeGet } from '../runbooks/out-of-service-taint-release/reads.ts';
import type { CleanupJobFact } from '../runbooks/out-of-service-taint-release/facts.ts';

// The runbooks of the cluster worker: the cluster-side steps that need Ceph credentials or the
// whole cluster's view. They hand node-side work to the node's own queue through the dispatcher.

export interface ClusterRegistryDeps {
  /** Only the lookups src/adapters/kube/rbac.ts lists for the cluster worker (its role grants no more). */
  lookups: LookupsOf<'cluster-worker'>;
  dispatcher: Pick<JobEnqueue, 'enqueue'>;
  /** The API reads of out-of-service-taint-release (src/adapters/kube/rbac.ts, its direct calls). */
  kubeGet: KubeGet;
  /** The Kubernetes write port (the Node patch, step Events); none: every write fails. */
  kube?: KubeWrites;
  /** Our `ceph osd blocklist add` records, per node (written by rbd-stale-mapping, read by the taint release). */
  blocklistUndo: BlocklistUndo;
  /** The node half's jobs and results from the job store. */
  cleanupJobs(node: string): Promise<CleanupJobFact[]>;
}

const cephAccess = (config: ClusterWorkerConfig) => ({
  ...(config.cephConf ? { conf: config.cephConf } : {}),
  ...(config.cephKeyring ? { keyring: config.cephKeyring } : {}),
  ...(config.cephId ? { id: config.cephId } : {}),
});

export function defaultClusterRegistry(config: ClusterWorkerConfig, deps: ClusterRegistryDeps): RunbookRegistry {
  const cephHost = createCephHost(createRealHost(), cephAccess(config));
  return {
    'rbd-stale-mapping': createRbdStaleMapping({
      host: createRealHost(),
      ceph: cephAccess(config),
      blocklistUndo: deps.blocklistUndo,
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
    'out-of-service-taint-release': createOutOfServiceTaintRelease({
      host: cephHost,
      kube: deps.kube ?? NO_KUBE_WRITES,
      get: deps.kubeGet,
      cleanupJobs: deps.cleanupJobs,
      ourBlocklist: ourBlocklistOf(deps.blocklistUndo, cephHost, () => new Date()),
      readyGraceSeconds: config.oosReadyGraceSeconds,
      stateDir: config.stateDir,
    }),
  };
}
