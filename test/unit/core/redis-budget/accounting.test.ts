import { describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { keysOfNodePattern, nodeKeyPattern, nodeOfKey, RemovalWalk, removalCut, SizeClasses, sizeClass } from '../../../../src/core/redis-budget/accounting.ts';
import { nodeUserRules } from '../../../../src/adapters/redis/node-user-acl.ts';

// The per-node memory budget's accounting: whose key is whose, and which of a node's keys go first.

/** Redis' glob, for the patterns here (`*` only; `{`, `}` literal). */
const glob = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );

describe('whose memory a key is', () => {
  const prefix = 'vm';
  it("is a node's exactly when its own Redis user's pattern matches it", () => {
    const userPattern = (node: string) =>
      nodeUserRules(prefix, node, '0'.repeat(64))
        .find((r) => r.startsWith('~'))!
        .slice(1);
    const keys = [
      `vm:${nodeQueueName('a')}:wait`,
      `vm:${nodeQueueName('a')}:vm:audit`,
      `vm:${nodeQueueName('a.b')}:x:y`,
      `vm:${nodeQueueName('ab')}:1`,
      `vm:${nodeQueueName('a')}x`,
      'vm:vm:ctl:audit',
      'vm:vm:acl:nodes',
      `other:${nodeQueueName('a')}:wait`,
      `vm:vm-node-{A}:wait`,
      'vm:vm-node-{a',
    ];
    for (const key of keys)
      for (const node of ['a', 'a.b', 'ab']) expect(nodeOfKey(prefix, key) === node, `${key} / ${node}`).toBe(glob(userPattern(node)).test(key));
    expect(nodeOfKey(prefix, `vm:${nodeQueueName('a')}:wait`)).toBe('a');
    expect(nodeOfKey(prefix, 'vm:vm:ctl:audit')).toBeUndefined();
  });

  it("scans every node's keys and no fleet key; one node's pattern is its user's", () => {
    expect(glob(nodeKeyPattern('vm')).test(`vm:${nodeQueueName('a')}:wait`)).toBe(true);
    expect(glob(nodeKeyPattern('vm')).test('vm:vm:ctl:audit')).toBe(false);
    expect(keysOfNodePattern('vm', 'a')).toBe(
      nodeUserRules('vm', 'a', '0'.repeat(64))
        .find((r) => r.startsWith('~'))!
        .slice(1),
    );
  });
});

describe('which keys a node over its budget gives back', () => {
  const classesOf = (sizes: number[]) => {
    const c = new SizeClasses();
    for (const s of sizes) c.add(s);
    return c;
  };
  /** The second SCAN's walk over `sizes` in that order: which go (by index). */
  const goes = (sizes: number[], need: number): boolean[] => {
    const cut = removalCut(classesOf(sizes), need);
    if (!cut) return sizes.map(() => false);
    const walk = new RemovalWalk(cut);
    return sizes.map((s) => walk.takes(s));
  };
  const removed = (sizes: number[], need: number): number[] => {
    const g = goes(sizes, need);
    return sizes.filter((_, i) => g[i]);
  };

  it('sorts sizes into powers of two', () => {
    expect([0, 1, 2, 3, 4, 1023, 1024, 60_000_000].map(sizeClass)).toEqual([0, 0, 1, 1, 2, 9, 10, 25]);
  });

  it('a flood of a few huge keys: the flood goes, the records a queue holds stay', () => {
    const job = 3_300;
    const flood = [20_000_000, 20_000_000, 20_000_000];
    const sizes = [job, 120, job, ...flood, 600_000, 3_500_000, job];
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(removed(sizes, total - 8 * 1_048_576)).toEqual(flood);
    // A budget that holds one of them: two go.
    expect(removed(sizes, total - 32 * 1_048_576)).toEqual(flood.slice(0, 2));
  });

  it('a flood of many small keys: small keys go, not the larger job records, audit list or events stream', () => {
    const flood = Array.from({ length: 100_000 }, () => 100);
    const records = [3_300, 3_300, 34_000, 600_000, 3_500_000];
    const sizes = [...records, ...flood];
    const kept = records.reduce((a, b) => a + b, 0) + 2_000_000;
    const total = sizes.reduce((a, b) => a + b, 0);
    const out = removed(sizes, total - kept);
    expect(out.every((s) => s === 100)).toBe(true);
    expect(out.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(total - kept);
  });

  it('gives back at least what is needed, at most one key more of the last class taken, heaviest classes first', () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 300; round++) {
      const sizes = Array.from({ length: 1 + Math.floor(rnd() * 200) }, () => 1 + Math.floor(rnd() ** 4 * 5_000_000));
      const total = sizes.reduce((a, b) => a + b, 0);
      const need = Math.floor(rnd() * total);
      const g = goes(sizes, need);
      const out = sizes.filter((_, i) => g[i]);
      const freed = out.reduce((a, b) => a + b, 0);
      if (need <= 0) {
        expect(out).toEqual([]);
        continue;
      }
      expect(freed).toBeGreaterThanOrEqual(need);
      const cut = removalCut(classesOf(sizes), need)!;
      expect(freed - need).toBeLessThan(2 ** (cut.partial + 1));
      // A class that lost keys weighs at least as much as every class that lost none.
      const classes = classesOf(sizes);
      const touched = new Set(sizes.filter((_, i) => g[i]).map(sizeClass));
      const untouched = [...new Set(sizes.map(sizeClass))].filter((c) => !touched.has(c));
      for (const t of touched) for (const u of untouched) expect(classes.bytes[t]!).toBeGreaterThanOrEqual(classes.bytes[u]!);
    }
  });

  it('nothing to give back: nothing goes; more needed than held: everything goes', () => {
    expect(removalCut(classesOf([100, 200]), 0)).toBeUndefined();
    expect(removalCut(new SizeClasses(), 10)).toBeUndefined();
    expect(removed([100, 200, 5], 10_000)).toEqual([100, 200, 5]);
  });
});
