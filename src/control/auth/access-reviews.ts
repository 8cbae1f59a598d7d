import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { OPERATOR_API_GROUP, type Permission } from './permissions.ts';
import type { Operator } from './operator.ts';

// The port to the API server's TokenReview (who is this token?) and SubjectAccessReview (may
// this user do that?). One implementation talks to the cluster through the KubeConfig of
// src/adapters/kube/kube-config.ts (the pod's service account, or a kubeconfig); tests run it against the
// wire-protocol fake of test/testkit/fake-kube-api.ts.

export type TokenReviewResult = { authenticated: true; user: Omit<Operator, 'via'> } | { authenticated: false; error: string };

export interface AccessDecision {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason?: string;
}

export interface AccessReviews {
  reviewToken(token: string): Promise<TokenReviewResult>;
  reviewAccess(user: Omit<Operator, 'via'>, permission: Permission): Promise<AccessDecision>;
}

/** The API server could not be asked (unreachable, or the receiver may not create reviews): 503, not 401/403. */
export class ReviewUnavailableError extends Error {
  override name = 'ReviewUnavailableError';
}

const unavailable = (what: string, err: unknown): ReviewUnavailableError => {
  const e = err as { code?: number; message?: string };
  const hint =
    e.code === 403 ? " (the receiver's service account needs create on tokenreviews.authentication.k8s.io and subjectaccessreviews.authorization.k8s.io)" : '';
  return new ReviewUnavailableError(`${what} failed: ${e.code ? `HTTP ${e.code}` : (e.message ?? String(err)).slice(0, 200)}${hint}`);
};

/**
 * `audiences`: when set, the token must be meant for one of them (TokenReview spec.audiences, and
 * the answer's status.audiences must name one); empty: the API server's own audience, which is
 * what `kubectl create token` gives by default.
 */
export function kubeAccessReviews(kc: KubeConfig, audiences: readonly string[] = []): AccessReviews {
  const authn = kc.makeApiClient(AuthenticationV1Api);
  const authz = kc.makeApiClient(AuthorizationV1Api);
  return {
    async reviewToken(token) {
      let review: Awaited<ReturnType<typeof authn.createTokenReview>>;
      try {
        review = await authn.createTokenReview({
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenReview',
            spec: { token, ...(audiences.length ? { audiences: [...audiences] } : {}) },
          },
        });
      } catch (err) {
        throw unavailable('TokenReview', err);
      }
      const s = review.status;
      if (!s?.authenticated || !s.user?.username) return { authenticated: false, error: s?.error ? 'the token was not accepted' : 'unknown token' };
      if (audiences.length && !(s.audiences ?? []).some((a) => audiences.includes(a)))
        return { authenticated: false, error: 'the token is not meant for volume-medic (audience)' };
      return {
        authenticated: true,
        user: {
          username: s.user.username,
          ...(s.user.uid ? { uid: s.user.uid } : {}),
          groups: s.user.groups ?? [],
          ...(s.user.extra ? { extra: s.user.extra } : {}),
        },
      };
    },
    async reviewAccess(user, permission) {
      let review: Awaited<ReturnType<typeof authz.createSubjectAccessReview>>;
      try {
        review = await authz.createSubjectAccessReview({
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: user.username,
              groups: user.groups,
              ...(user.uid ? { uid: user.uid } : {}),
              ...(user.extra ? { extra: user.extra } : {}),
              resourceAttributes: { group: OPERATOR_API_GROUP, resource: permission.resource, verb: permission.verb },
            },
          },
        });
      } catch (err) {
        throw unavailable('SubjectAccessReview', err);
      }
      const allowed = review.status?.allowed === true && review.status.denied !== true;
      return { allowed, ...(review.status?.reason ? { reason: review.status.reason } : {}) };
    },
  };
}
