import { describe, expect, it } from 'vitest';
import { bursts } from '../../../../src/control/console/storms.ts';
import type { IndexEntry } from '../../../../src/adapters/jobstore/incident-index.ts';

const at = (min: number, runbook: string, node: string): IndexEntry => ({
  queue: `vm-node-{${node}}`,
  id: `${runbook}-${node}-${min}`,
  node,
  runbook,
  score: min * 60_000 * 1000,
  member: `${runbook}/${node}/${min}`,
});

describe('storm bursts', () => {
  it("keeps one runbook's jobs in one burst while no gap exceeds the limit, and starts another after one does", () => {
    // Newest first, as the index reads.
    const entries = [at(100, 'a', 'n1'), at(99, 'b', 'n1'), at(95, 'a', 'n2'), at(86, 'a', 'n3'), at(60, 'a', 'n4'), at(59, 'a', 'n5')];
    const got = bursts(entries, 10 * 60_000).map((g) => g.map((e) => e.member));
    expect(got).toEqual(expect.arrayContaining([['a/n1/100', 'a/n2/95', 'a/n3/86'], ['a/n4/60', 'a/n5/59'], ['b/n1/99']]));
    expect(got).toHaveLength(3);
  });

  it('a gap of exactly the limit stays in the burst', () => {
    expect(bursts([at(20, 'a', 'n1'), at(10, 'a', 'n2')], 10 * 60_000)).toHaveLength(1);
    expect(bursts([at(20, 'a', 'n1'), at(9, 'a', 'n2')], 10 * 60_000)).toHaveLength(2);
  });
});
