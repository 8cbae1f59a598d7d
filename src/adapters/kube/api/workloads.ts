import type { V1Deployment } from '@kubernetes/client-node';
import type { CoreApi, AppsApi } from './apis.ts';
import type { DeploymentInfo, NamespacedName } from '../lookups.ts';
import { isNotFound } from './not-found.ts';
import { podInfo } from './pods.ts';

// Pod -> ReplicaSet -> Deployment, for the RBD advice: a Deployment with a ReadWriteOnce claim
// that surges (RollingUpdate, maxSurge > 0) starts the new pod while the old one still maps the image.

export function deploymentInfo(d: V1Deployment): DeploymentInfo {
  const type = d.spec?.strategy?.type === 'Recreate' ? 'Recreate' : 'RollingUpdate';
  const ru = d.spec?.strategy?.rollingUpdate;
  return {
    namespace: d.metadata?.namespace ?? '',
    name: d.metadata?.name ?? '',
    strategy: type,
    ...(type === 'RollingUpdate' && ru?.maxSurge !== undefined ? { maxSurge: ru.maxSurge as number | string } : {}),
    ...(type === 'RollingUpdate' && ru?.maxUnavailable !== undefined ? { maxUnavailable: ru.maxUnavailable as number | string } : {}),
    ...(d.spec?.replicas !== undefined ? { replicas: d.spec.replicas } : {}),
    claims: (d.spec?.template.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim?.claimName ? [v.persistentVolumeClaim.claimName] : [])),
  };
}

export async function readDeploymentOfPod(core: CoreApi, apps: AppsApi, pod: NamespacedName): Promise<DeploymentInfo | undefined> {
  try {
    const p = podInfo(await core.readNamespacedPod(pod));
    if (p.controller?.kind !== 'ReplicaSet') return undefined;
    const rs = await apps.readNamespacedReplicaSet({ namespace: pod.namespace, name: p.controller.name });
    const owner = rs.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'Deployment');
    if (!owner) return undefined;
    return deploymentInfo(await apps.readNamespacedDeployment({ namespace: pod.namespace, name: owner.name }));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
