import { describe, expect, it } from 'vitest';
import type { AccessReviews } from '../../../../src/control/auth/access-reviews.ts';
import { cachedReviews } from '../../../../src/control/auth/cached-reviews.ts';

function counting(known: Record<string, string>, allowed: boolean) {
  const calls = { token: [] as string[], access: 0 };
  const inner: AccessReviews = {
    reviewToken: async (token) => {
      calls.token.push(token);
      const username = known[token];
      return username ? { authenticated: true, user: { username, groups: [] } } : { authenticated: false, error: 'unknown token' };
    },
    reviewAccess: async () => {
      calls.access += 1;
      return { allowed };
    },
  };
  return { inner, calls };
}

describe('cached TokenReview and SubjectAccessReview answers', () => {
  it('remembers an accepted token for tokenTtlMs, then asks again', async () => {
    let t = 0;
    const { inner, calls } = counting({ good: 'alice' }, true);
    const c = cachedReviews(inner, { tokenTtlMs: 30_000, accessTtlMs: 10_000, now: () => t });
    expect(await c.reviewToken('good')).toMatchObject({ authenticated: true, user: { username: 'alice' } });
    t = 29_999;
    await c.reviewToken('good');
    expect(calls.token).toHaveLength(1);
    t = 30_000;
    await c.reviewToken('good');
    expect(calls.token).toHaveLength(2);
  });

  it('never remembers a refused token: each try is asked (and counted by the failed-auth limit)', async () => {
    const { inner, calls } = counting({}, true);
    const c = cachedReviews(inner, { tokenTtlMs: 30_000, accessTtlMs: 10_000, now: () => 0 });
    await c.reviewToken('bad');
    await c.reviewToken('bad');
    expect(calls.token).toEqual(['bad', 'bad']);
  });

  it('remembers an access decision, allowed or not, per user, groups and permission, for accessTtlMs', async () => {
    let t = 0;
    const { inner, calls } = counting({}, false);
    const c = cachedReviews(inner, { tokenTtlMs: 30_000, accessTtlMs: 10_000, now: () => t });
    const alice = { username: 'alice', groups: ['b', 'a'] };
    expect(await c.reviewAccess(alice, { resource: 'jobs', verb: 'approve' })).toEqual({ allowed: false });
    await c.reviewAccess({ username: 'alice', groups: ['a', 'b'] }, { resource: 'jobs', verb: 'approve' });
    expect(calls.access).toBe(1);
    await c.reviewAccess(alice, { resource: 'jobs', verb: 'reject' });
    await c.reviewAccess({ username: 'alice', groups: ['a'] }, { resource: 'jobs', verb: 'approve' });
    expect(calls.access).toBe(3);
    t = 10_000;
    await c.reviewAccess(alice, { resource: 'jobs', verb: 'approve' });
    expect(calls.access).toBe(4);
  });

  it('0 s: asks every time', async () => {
    const { inner, calls } = counting({ good: 'alice' }, true);
    const c = cachedReviews(inner, { tokenTtlMs: 0, accessTtlMs: 0, now: () => 0 });
    await c.reviewToken('good');
    await c.reviewToken('good');
    await c.reviewAccess({ username: 'a', groups: [] }, { resource: 'controls', verb: 'get' });
    await c.reviewAccess({ username: 'a', groups: [] }, { resource: 'controls', verb: 'get' });
    expect([calls.token.length, calls.access]).toEqual([2, 2]);
  });
});
