import { createHash } from 'node:crypto';
import { GenerationalMap } from '../../core/collections/generational-map.ts';
import type { AccessDecision, AccessReviews, TokenReviewResult } from './access-reviews.ts';
import type { Permission } from './permissions.ts';

// Every operator request would otherwise cost the API server a TokenReview and a
// SubjectAccessReview. Accepted tokens are remembered for tokenTtlMs under the token's SHA-256
// (the token itself is never kept, nor logged); refused tokens are not remembered (a typo fixed
// works at once; guessing is slowed by the failed-auth limit instead). Access decisions, both
// ways, are remembered for accessTtlMs: a RoleBinding removed takes at most that long to bite.

export interface ReviewCacheOptions {
  tokenTtlMs: number;
  accessTtlMs: number;
  now?: () => number;
  /** Most entries of each cache. Default 10,000. */
  capacity?: number;
}

interface Timed<T> {
  at: number;
  value: T;
}

const sha256 = (v: string): string => createHash('sha256').update(v, 'utf8').digest('base64url');

export function cachedReviews(inner: AccessReviews, o: ReviewCacheOptions): AccessReviews {
  const now = o.now ?? Date.now;
  const tokens = new GenerationalMap<string, Timed<TokenReviewResult>>(o.capacity ?? 10_000);
  const access = new GenerationalMap<string, Timed<AccessDecision>>(o.capacity ?? 10_000);
  const fresh = <T>(t: Timed<T> | undefined, ttl: number): t is Timed<T> => t !== undefined && now() - t.at < ttl;
  return {
    async reviewToken(token) {
      const key = sha256(token);
      const hit = tokens.get(key);
      if (fresh(hit, o.tokenTtlMs)) return hit.value;
      const value = await inner.reviewToken(token);
      if (value.authenticated && o.tokenTtlMs > 0) tokens.set(key, { at: now(), value });
      else tokens.delete(key);
      return value;
    },
    async reviewAccess(user, permission: Permission) {
      const key = JSON.stringify([user.username, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, permission.resource, permission.verb]);
      const hit = access.get(key);
      if (fresh(hit, o.accessTtlMs)) return hit.value;
      const value = await inner.reviewAccess(user, permission);
      if (o.accessTtlMs > 0) access.set(key, { at: now(), value });
      return value;
    },
  };
}
