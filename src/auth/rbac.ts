import type { RbacRule } from '../kube/rbac.ts';

// What the receiver itself needs from the API server to check operators (OPERATOR_AUTH=kubernetes):
// kept apart from KUBE_RBAC (the watches' and lookups' calls) because only the receiver makes
// these, whatever KUBE_WATCH says. deploy/ grants them to the receiver's ServiceAccount.
export const OPERATOR_AUTH_RBAC: readonly (Omit<RbacRule, 'verbs'> & { verbs: readonly 'create'[] })[] = [
  { apiGroup: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create'], usedBy: 'receiver: who an operator\'s bearer token belongs to (OPERATOR_AUTH=kubernetes)' },
  { apiGroup: 'authorization.k8s.io', resource: 'subjectaccessreviews', verbs: ['create'], usedBy: 'receiver: whether that operator may do what the route does (volume-medic.io verbs)' },
];
