import { describe, expect, it } from 'vitest';
import { fullJitter, WORKER_BACKOFF } from '../../../../src/adapters/redis/reconnect-backoff.ts';

// After a Redis restart every agent reconnects at once; full jitter spreads them over a window
// that doubles per attempt up to a cap (the old min(n * 200, 5000) sent them all in lockstep).

describe('reconnect backoff with full jitter', () => {
  it('draws from [0, min(cap, base * 2^(n-1))) for the n-th attempt', () => {
    const top = fullJitter({ baseMs: 200, capMs: 5_000 }, () => 0.999999);
    expect([1, 2, 3, 4, 5, 6, 7, 50, 5000].map(top)).toEqual([199, 399, 799, 1599, 3199, 4999, 4999, 4999, 4999]);
    expect(fullJitter({ baseMs: 200, capMs: 5_000 }, () => 0)(9)).toBe(0);
  });

  it('spreads a thousand agents over the window instead of one slot', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const delay = fullJitter(WORKER_BACKOFF, random);
    const first = Array.from({ length: 1000 }, () => delay(1));
    const buckets = new Array(4).fill(0) as number[];
    for (const d of first) buckets[Math.floor(d / 50)]! += 1;
    // Four 50 ms buckets of [0, 200): each holds roughly a quarter.
    for (const b of buckets) expect(b).toBeGreaterThan(180);
    expect(new Set(first).size).toBeGreaterThan(150);
  });
});
