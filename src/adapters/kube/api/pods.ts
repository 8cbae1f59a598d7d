import type { V1Pod } from '@kubernetes/client-node';
import type { CoreApi } from './apis.ts';
import type { NamespacedName, PersistentVolumeInfo, PodInfo } from '../lookups.ts';
import { isNotFound } from './not-found.ts';
import { claimInfo, readPersistentVolume } from './volumes.ts';

// Pods and the claims they use. The multi-attach interlock asks "does a pod on that node still use
// this PVC", so a node's pods are listed by field selector rather than all pods of the cluster.

export function podInfo(p: V1Pod): PodInfo {
  const owner = p.metadata?.ownerReferences?.find((o) => o.controller);
  const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    ...(p.metadata?.uid ? { uid: p.metadata.uid } : {}),
    ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
    ...(p.status?.phase ? { phase: p.status.phase } : {}),
    claims: (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim?.claimName ? [v.persistentVolumeClaim.claimName] : [])),
    waiting: statuses.flatMap((s) =>
      s.state?.waiting?.reason
        ? [{ container: s.name, reason: s.state.waiting.reason, ...(s.state.waiting.message ? { message: s.state.waiting.message } : {}) }]
        : [],
    ),
    ...(owner ? { controller: { kind: owner.kind, name: owner.name } } : {}),
    ...(p.metadata?.resourceVersion ? { resourceVersion: p.metadata.resourceVersion } : {}),
    ...(p.metadata?.deletionTimestamp ? { deletionTimestamp: new Date(p.metadata.deletionTimestamp).toISOString() } : {}),
    ...readOnlyClaimsOf(p),
  };
}

/** PVCs the pod uses read-only by its own request: the volume's readOnly, or every container's mount of it. */
function readOnlyClaimsOf(p: V1Pod): { readOnlyClaims?: string[] } {
  const containers = [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])];
  const out: string[] = [];
  for (const v of p.spec?.volumes ?? []) {
    const claim = v.persistentVolumeClaim?.claimName;
    if (!claim) continue;
    const mounts = containers.flatMap((c) => (c.volumeMounts ?? []).filter((m) => m.name === v.name));
    if (v.persistentVolumeClaim?.readOnly || (mounts.length > 0 && mounts.every((m) => m.readOnly))) out.push(claim);
  }
  return out.length ? { readOnlyClaims: out } : {};
}

export async function readPod(core: CoreApi, ref: NamespacedName): Promise<PodInfo | undefined> {
  try {
    return podInfo(await core.readNamespacedPod(ref));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function listPodsUsingClaim(core: CoreApi, claim: NamespacedName): Promise<PodInfo[]> {
  const list = await core.listNamespacedPod({ namespace: claim.namespace });
  return list.items.map(podInfo).filter((p) => p.claims.includes(claim.name));
}

export async function listPodsOnNodeUsingClaim(core: CoreApi, node: string, claim: NamespacedName): Promise<PodInfo[]> {
  const list = await core.listNamespacedPod({ namespace: claim.namespace, fieldSelector: `spec.nodeName=${node}` });
  // The field selector is the server's job; filter again so a server that ignores it cannot mislead.
  return list.items.map(podInfo).filter((p) => p.node === node && p.claims.includes(claim.name));
}

export async function readVolumesOfPod(core: CoreApi, pod: NamespacedName): Promise<PersistentVolumeInfo[]> {
  let claims: string[];
  try {
    claims = podInfo(await core.readNamespacedPod(pod)).claims;
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
  const out: PersistentVolumeInfo[] = [];
  for (const name of claims) {
    let volume: string | undefined;
    try {
      volume = claimInfo(await core.readNamespacedPersistentVolumeClaim({ namespace: pod.namespace, name })).volumeName;
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    const pv = volume ? await readPersistentVolume(core, volume) : undefined;
    // Bound both ways (ClusterLookups.volumesOfPod): the PV's claimRef names this very PVC.
    if (pv && pv.claim?.namespace === pod.namespace && pv.claim.name === name) out.push(pv);
  }
  return out;
}

export async function listPodsOnNode(core: CoreApi, node: string): Promise<PodInfo[]> {
  const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
  return list.items.map(podInfo).filter((p) => p.node === node);
}

/** Every pod of the cluster, from the API server's watch cache (resourceVersion=0: no etcd read per scan). */
export async function listAllPods(core: CoreApi): Promise<PodInfo[]> {
  const list = await core.listPodForAllNamespaces({ resourceVersion: '0' });
  return list.items.map(podInfo);
}
