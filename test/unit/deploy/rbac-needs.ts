// What the Kubernetes adapter asks the API for, as issue 3 lists it. src/kube/rbac.ts (the
// adapter's own list) did not exist when the manifests were written; when it lands, replace this
// constant with an import of it, and rbac.test.ts keeps deploy/base/rbac.yaml equal to the code.

export interface RbacNeed {
  /** API group: "" is the core group. */
  group: string;
  resource: string;
  verbs: readonly string[];
}

const READ = ['get', 'list', 'watch'] as const;

export const ISSUE_3_RBAC_NEEDS: readonly RbacNeed[] = [
  { group: '', resource: 'nodes', verbs: READ },
  { group: '', resource: 'events', verbs: [...READ, 'create', 'patch'] },
  { group: '', resource: 'pods', verbs: READ },
  { group: '', resource: 'persistentvolumes', verbs: READ },
  { group: '', resource: 'persistentvolumeclaims', verbs: READ },
  { group: 'storage.k8s.io', resource: 'volumeattachments', verbs: READ },
  { group: 'apps', resource: 'deployments', verbs: READ },
  { group: 'apps', resource: 'replicasets', verbs: READ },
];
