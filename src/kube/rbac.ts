// Every API call the Kubernetes adapter makes, in one place. The deploy tooling generates the
// least-privilege ClusterRole from this list, and a test checks it against the calls the adapter
// really makes (test/int/kube-*.int.test.ts record them on the fake API server).

export interface RbacRule {
  /** '' is the core group. */
  apiGroup: string;
  resource: string;
  verbs: readonly ('get' | 'list' | 'watch' | 'create' | 'patch')[];
  /** Which part of volume-medic needs it, and why. */
  usedBy: string;
}

export const KUBE_RBAC: readonly RbacRule[] = [
  { apiGroup: '', resource: 'nodes', verbs: ['get', 'list', 'watch'], usedBy: 'Node watch (Ready transitions), reconcile, lookups node/nodesByAddress' },
  { apiGroup: '', resource: 'events', verbs: ['list', 'watch'], usedBy: 'Event watch per reason, reconcile (latest events of stuck pods)' },
  { apiGroup: '', resource: 'pods', verbs: ['get', 'list'], usedBy: 'reconcile (pending pods), lookups podsUsingVolume/podsOnNodeUsingClaim/podsOnNode/volumesOfPod/deploymentOfPod' },
  { apiGroup: '', resource: 'persistentvolumes', verbs: ['get', 'list'], usedBy: 'lookups persistentVolume/persistentVolumeByLocalPath/claimOfVolume' },
  { apiGroup: '', resource: 'persistentvolumeclaims', verbs: ['get'], usedBy: 'lookups claimOfVolume' },
  { apiGroup: 'storage.k8s.io', resource: 'volumeattachments', verbs: ['list'], usedBy: 'lookups volumeAttachmentsOnNode (residual-map interlock)' },
  { apiGroup: 'apps', resource: 'replicasets', verbs: ['get'], usedBy: 'lookups deploymentOfPod' },
  { apiGroup: 'apps', resource: 'deployments', verbs: ['get'], usedBy: 'lookups deploymentOfPod (RBD prevention advice)' },
  { apiGroup: 'events.k8s.io', resource: 'events', verbs: ['get', 'create', 'patch'], usedBy: 'JobEventRecorder (job start/refusal/success/failure, aggregated)' },
];

/** The request a verb on a resource shows up as (for matching recorded API requests). */
export function verbOf(method: string, watch: boolean, named: boolean): RbacRule['verbs'][number] | undefined {
  if (method === 'GET') return watch ? 'watch' : named ? 'get' : 'list';
  if (method === 'POST') return 'create';
  if (method === 'PATCH') return 'patch';
  return undefined;
}
