import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { breakerSealDates, verifyBreakerAsk } from '../../../../src/core/controls/breaker-seal.ts';
import { BREAKER_SEAL_TTL_MS, breakerSubject, type BreakerAsk } from '../../../../src/core/controls/breaker-wire.ts';
import type { Keyring } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf, workKeyRing, workRingFor } from '../../../../src/core/trust/work-keys.ts';

// What the receiver checks of an agent's breaker ask, before it derives anything for it.

const roots: Keyring = {
  verify: new Map([
    ['node-agent.k1', randomBytes(32)],
    ['receiver.k1', randomBytes(32)],
  ]),
};
const NOW = Date.parse('2026-12-01T12:00:00Z');
const MINUTE = 60_000;

/** What node `n`'s enrolled agent seals with, by a clock showing `iat`. */
const sealFor = (n: string, ask: BreakerAsk, iat = NOW, ttlMs = BREAKER_SEAL_TTL_MS, role: 'node-agent' | 'receiver' = 'node-agent') => {
  const q = nodeQueueName(n);
  const key = workKeyOf(roots.verify.get(`${role}.k1`)!, role, q);
  const sealer = sealerOf({ verify: new Map([[`${role}.k1`, key]]), signing: { role, kid: 'k1', key }, scope: q }, () => iat)!;
  return sealer.seal('breaker', breakerSubject(q), ask, ttlMs);
};

const reserve = (node: string): BreakerAsk => ({ op: 'reserve', node, jobId: 'j1', stepId: 's1' });

describe("a breaker ask's seal", () => {
  it("holds when node A's agent sealed it for node A, for a minute, by about the receiver's clock", () => {
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a')), NOW)).toMatchObject({ ok: true });
    // The agent's clock up to a minute behind or ahead.
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a'), NOW - 50_000), NOW)).toMatchObject({ ok: true });
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a'), NOW + 50_000), NOW)).toMatchObject({ ok: true });
  });

  it('is refused when it lives longer than a minute, however fresh, or was made three hours ago for ten years', () => {
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a'), NOW, BREAKER_SEAL_TTL_MS + 1), NOW)).toMatchObject({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a'), NOW - 180 * MINUTE, 10 * 365 * 24 * 60 * MINUTE), NOW)).toMatchObject({
      ok: false,
      detail: expect.stringContaining('lives at most 60 s'),
    });
  });

  it("is refused when dated more than a minute ahead of the receiver's clock, or over by it", () => {
    expect(breakerSealDates({ iat: NOW + 2 * MINUTE, exp: NOW + 3 * MINUTE }, NOW)).toMatchObject({ reason: 'not-yet-valid' });
    expect(breakerSealDates({ iat: NOW - 2 * MINUTE, exp: NOW - MINUTE }, NOW)).toMatchObject({ reason: 'expired' });
    expect(breakerSealDates({ iat: NOW, exp: NOW }, NOW)).toMatchObject({ reason: 'malformed' });
    expect(breakerSealDates({ iat: NOW, exp: NOW - 1 }, NOW)).toMatchObject({ reason: 'malformed' });
    expect(breakerSealDates({ iat: NOW - MINUTE, exp: NOW }, NOW)).toBeUndefined();
  });

  it("is refused for node B when made with node A's key, and when sealed by another role", () => {
    expect(verifyBreakerAsk(roots, reserve('b'), sealFor('a', reserve('b')), NOW)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(verifyBreakerAsk(roots, reserve('a'), sealFor('a', reserve('a'), NOW, BREAKER_SEAL_TTL_MS, 'receiver'), NOW)).toMatchObject({
      ok: false,
      reason: 'wrong-issuer',
    });
    expect(verifyBreakerAsk(roots, reserve('a'), { ...sealFor('a', reserve('a')), kid: 'k2' }, NOW)).toMatchObject({ ok: false, reason: 'unknown-key' });
  });
});

describe('workKeyRing', () => {
  it('holds the one key workRingFor derives under that name, and nothing for a root it lacks', () => {
    const q = nodeQueueName('a');
    expect(workKeyRing(roots, q, 'node-agent.k1').verify).toEqual(new Map([['node-agent.k1', workRingFor(roots, q).verify.get('node-agent.k1')]]));
    expect(workKeyRing(roots, q, 'node-agent.k9').verify.size).toBe(0);
  });
});
