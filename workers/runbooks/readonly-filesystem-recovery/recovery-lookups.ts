import type { ClusterLookups, PodInfo } from '../../../src/adapters/kube/lookups.ts';
import { TransientError } from '../../../src/core/errors.ts';
import type { PodFacts, PvFacts } from './facts.ts';
import type { KubeletMount } from './kubelet-mounts.ts';

// What this runbook reads from the API server (the node agent's lookups, src/adapters/kube/rbac.ts):
// the pods on the node (a mount's path names the pod by UID only), one pod read fresh (its
// resourceVersion, owner and deletionTimestamp, for the delete's preconditions and the re-check),
// and the PVs (a read-only request). Without cluster access the runbook cannot tell a pod apart,
// and refuses.
export type RecoveryLookups = Pick<ClusterLookups, 'podsOnNode' | 'pod' | 'persistentVolume'>;

function podFacts(uid: string, p: PodInfo | undefined): PodFacts {
  if (!p || p.uid !== uid) return { uid, pod: null };
  return {
    uid,
    pod: {
      namespace: p.namespace,
      name: p.name,
      ...(p.node ? { node: p.node } : {}),
      ...(p.resourceVersion ? { resourceVersion: p.resourceVersion } : {}),
      ...(p.deletionTimestamp ? { deletionTimestamp: p.deletionTimestamp } : {}),
      ...(p.controller ? { controller: p.controller } : {}),
      claims: [...p.claims],
      readOnlyClaims: [...(p.readOnlyClaims ?? [])],
    },
  };
}

/** The pods and PVs behind a device's kubelet mounts. API errors are transient: the job tries again. */
export async function readPodsAndVolumes(
  lookups: RecoveryLookups,
  node: string,
  mounts: readonly KubeletMount[],
): Promise<{ pods: PodFacts[]; pvs: PvFacts[] }> {
  const uids = [...new Set(mounts.flatMap((m) => (m.podUid ? [m.podUid] : [])))];
  const names = [...new Set(mounts.flatMap((m) => (m.pv ? [m.pv] : [])))];
  try {
    const onNode = uids.length ? await lookups.podsOnNode(node) : [];
    const pods: PodFacts[] = [];
    for (const uid of uids) {
      const listed = onNode.find((p) => p.uid === uid);
      pods.push(podFacts(uid, listed ? await lookups.pod({ namespace: listed.namespace, name: listed.name }) : undefined));
    }
    const pvs: PvFacts[] = [];
    for (const name of names) {
      const pv = await lookups.persistentVolume(name);
      pvs.push({ name, readOnly: pv ? pv.readOnly === true : null, ...(pv?.claim ? { claim: pv.claim } : {}) });
    }
    return { pods, pvs };
  } catch (err) {
    throw new TransientError(`cannot read the pods and volumes of node ${node}: ${(err as Error).message}`);
  }
}
