import { describe, expect, it } from 'vitest';
import { DEFAULT_PASS_POLICY, fullness, nodesOverBudget, passDue } from '../../../../src/core/redis-budget/decision.ts';
import { parseMemoryInfo } from '../../../../src/adapters/redis/node-memory.ts';

// When the receiver counts every node's keys, and whom it restricts.

const MiB = 1_048_576;
const at = (used: number, max = 100 * MiB) => ({ used: used * MiB, max });

describe('when a count of every node is due', () => {
  const p = DEFAULT_PASS_POLICY;
  it('counts at start, then every period when Redis is not under pressure', () => {
    expect(passDue([at(10)], undefined, 0)).toBe('first');
    const last = { at: 1_000, fullness: 0.1 };
    expect(passDue([at(10)], last, 1_000 + p.periodMs - 1)).toBeUndefined();
    expect(passDue([at(10)], last, 1_000 + p.periodMs)).toBe('periodic');
  });

  it('counts within a second of a flood: pressure after a quiet count', () => {
    const last = { at: 0, fullness: 0.1 };
    expect(passDue([at(79)], last, 1_000)).toBeUndefined();
    expect(passDue([at(80)], last, 1_000)).toBe('pressure');
    expect(passDue([at(100)], last, 1_000)).toBe('pressure');
  });

  it('a Redis that stays full with no node to blame is counted every minGap, not in a loop; a second flood at once', () => {
    const last = { at: 10_000, fullness: 0.95 };
    expect(passDue([at(96)], last, 11_000)).toBeUndefined();
    expect(passDue([at(96)], last, 10_000 + p.minGapMs)).toBe('pressure');
    expect(passDue([at(100)], last, 11_000)).toBe('pressure');
  });

  it('the fullest primary decides (a Cluster); a primary without maxmemory is never under pressure', () => {
    expect(fullness([at(10), at(90), { used: 500 * MiB, max: 0 }])).toBeCloseTo(0.9);
    expect(fullness([{ used: 500 * MiB, max: 0 }])).toBe(0);
    expect(passDue([{ used: 500 * MiB, max: 0 }], { at: 0, fullness: 0 }, 1_000)).toBeUndefined();
  });

  it('reads used_memory and maxmemory from INFO memory', () => {
    const info = '# Memory\r\nused_memory:914744\r\nused_memory_human:893.30K\r\nused_memory_rss:1\r\nmaxmemory:52428800\r\nmaxmemory_human:50.00M\r\n';
    expect(parseMemoryInfo(info)).toEqual({ used: 914_744, max: 52_428_800 });
    expect(parseMemoryInfo('# Memory\r\nused_memory:5\r\n')).toEqual({ used: 5, max: 0 });
  });
});

describe('who is over budget', () => {
  it('only nodes over it, the largest first; a node at its budget is not', () => {
    const usage = new Map([
      ['quiet', 1_000],
      ['busy', 10 * MiB],
      ['flood', 60 * MiB],
      ['at', 32 * MiB],
      ['over', 32 * MiB + 1],
    ]);
    expect(nodesOverBudget(usage, 32 * MiB)).toEqual([
      { node: 'flood', bytes: 60 * MiB },
      { node: 'over', bytes: 32 * MiB + 1 },
    ]);
  });
});
