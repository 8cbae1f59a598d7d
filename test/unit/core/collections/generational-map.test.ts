import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GenerationalMap } from '../../../../src/core/collections/generational-map.ts';

// Checked against a model that remembers everything in insertion order: the map may forget, but
// never answers a value that is not the key's latest, never weighs more than its capacity, and
// always holds the newest entries up to half of it.

type Op = { op: 'set'; key: number; value: number; w: number } | { op: 'delete'; key: number };

const ops = fc.array(
  fc.oneof(
    fc.record({
      op: fc.constant('set' as const),
      key: fc.integer({ min: 0, max: 40 }),
      value: fc.integer(),
      w: fc.integer({ min: 1, max: 12 }),
    }),
    fc.record({ op: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 40 }) }),
  ),
  { maxLength: 300 },
);

describe('GenerationalMap', () => {
  it('answers only latest values, stays within its capacity and keeps the newest half', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 60 }), ops, (capacity, list) => {
        const weights = new Map<number, number>();
        const m = new GenerationalMap<number, number>(capacity, (_, v) => weights.get(v) ?? 1);
        // The model: key -> [value, weight], oldest first (a set moves the key to the end).
        const model = new Map<number, [number, number]>();
        list.forEach((o: Op, i) => {
          if (o.op === 'set') {
            const value = o.value * 1000 + i; // distinct per set, so a stale value is told apart
            weights.set(value, o.w);
            m.set(o.key, value);
            model.delete(o.key);
            model.set(o.key, [value, o.w]);
          } else {
            m.delete(o.key);
            model.delete(o.key);
          }
          expect(m.weight).toBeLessThanOrEqual(capacity);
          let held = 0;
          for (const [k, [v, w]] of model) {
            const got = m.get(k);
            if (got !== undefined) {
              expect(got).toBe(v);
              held += w;
            }
            expect(m.has(k)).toBe(got !== undefined);
          }
          expect(m.weight).toBe(held);
          // The newest entries that fit in half the capacity, less one entry (the one that made
          // the young generation turn old), are all there.
          let newest = 0;
          for (const [k, [, w]] of [...model].reverse()) {
            if (w > capacity / 2) continue;
            newest += w;
            if (newest > capacity / 2 - 12) break;
            expect(m.get(k), `key ${k} of the newest entries`).toBeDefined();
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('forgets the oldest generation first', () => {
    const m = new GenerationalMap<string, number>(4);
    for (const [i, k] of ['a', 'b', 'c', 'd', 'e'].entries()) m.set(k, i);
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => m.has(k))).toEqual([false, false, true, true, true]);
    expect(m.size).toBe(3);
  });

  it('does not keep an entry heavier than half its capacity, and drops the key old value', () => {
    const m = new GenerationalMap<string, string>(10, (_, v) => v.length);
    m.set('k', 'abc');
    m.set('k', 'abcdef');
    expect(m.get('k')).toBeUndefined();
    expect(m.weight).toBe(0);
  });

  it('keeps nothing at capacity 0, and refuses a capacity that is no number of entries', () => {
    const m = new GenerationalMap<string, number>(0);
    m.set('k', 1);
    expect(m.size).toBe(0);
    expect(() => new GenerationalMap(-1)).toThrow(RangeError);
    expect(() => new GenerationalMap(Number.NaN)).toThrow(RangeError);
  });
});
