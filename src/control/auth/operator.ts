// Who an operator is, once verified: what the Kubernetes TokenReview (or a trusted auth proxy)
// said, never what a request body says. `username` is what the audit trail records.

export interface Operator {
  username: string;
  uid?: string;
  groups: string[];
  /** TokenReview's extra (scopes and the like); passed on to SubjectAccessReview as given. */
  extra?: Record<string, string[]>;
  /** How the identity was established. */
  via: 'token' | 'proxy' | 'insecure';
}
