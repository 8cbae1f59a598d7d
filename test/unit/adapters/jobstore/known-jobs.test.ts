import { describe, expect, it } from 'vitest';
import { KnownJobs } from '../../../../src/adapters/jobstore/known-jobs.ts';

// The dispatcher's known keys, with its clock in hand: a key is answered from memory only while
// the job is certainly stored (its queue's window, less a margin for clocks) and never longer
// than maxMs. The live half (a real Redis, a dropped connection) is test/int/adapters/jobstore/dispatcher-known-keys.int.test.ts.

const HOUR = 3_600_000;

function known(o: { maxMs?: number; limit?: number; windowMs?: number } = {}) {
  let now = 1_000_000_000;
  const k = new KnownJobs({ maxMs: o.maxMs ?? 60_000, limit: o.limit ?? 100, windowMs: () => o.windowMs ?? HOUR, now: () => now });
  return { k, at: () => now, advance: (ms: number) => (now += ms) };
}

describe('KnownJobs', () => {
  it('knows a job remembered on its queue, and not the same key on another queue', () => {
    const { k, at } = known();
    k.remember('vm-node-{a}', 'key-1', at());
    expect(k.has('vm-node-{a}', 'key-1')).toBe(true);
    expect(k.has('vm-node-{b}', 'key-1')).toBe(false);
    expect(k.has('vm-node-{a}', 'key-2')).toBe(false);
  });

  it('forgets a key after maxMs, though the window is longer', () => {
    const { k, at, advance } = known({ maxMs: 60_000 });
    k.remember('q', 'key', at());
    advance(59_999);
    expect(k.has('q', 'key')).toBe(true);
    advance(1);
    expect(k.has('q', 'key')).toBe(false);
  });

  it('forgets a job stored long ago once its window, less the margin for clocks, has passed', () => {
    const { k, at } = known({ maxMs: HOUR, windowMs: 10 * 60_000 });
    // Stored 9 minutes ago: the window ends in 1 minute, the margin (60 s) takes that.
    k.remember('q', 'old', at() - 9 * 60_000);
    expect(k.has('q', 'old')).toBe(false);
    k.remember('q', 'recent', at() - 5 * 60_000);
    expect(k.has('q', 'recent')).toBe(true);
  });

  it('remembers nothing with maxMs 0 or a limit of 0, nor a job whose store time is not a number', () => {
    for (const o of [{ maxMs: 0 }, { limit: 0 }]) {
      const { k, at } = known(o);
      k.remember('q', 'key', at());
      expect(k.has('q', 'key')).toBe(false);
    }
    const { k } = known();
    k.remember('q', 'key', Number.NaN);
    expect(k.has('q', 'key')).toBe(false);
  });

  it('forgets everything on clear', () => {
    const { k, at } = known();
    k.remember('q', 'key', at());
    k.clear();
    expect(k.has('q', 'key')).toBe(false);
  });
});
