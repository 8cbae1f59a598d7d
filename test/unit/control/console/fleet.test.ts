import { describe, expect, it } from 'vitest';
import { agentState } from '../../../../src/control/console/agent-state.ts';
import { FleetQuery, fleetPage } from '../../../../src/control/console/fleet.ts';
import type { QueueScan } from '../../../../src/adapters/jobstore/queue-scan.ts';
import { stateCounts } from '../../../../src/control/console/state-counts.ts';

// The fleet overview's rows, order, filter and pages (src/control/console/fleet.ts) over a made-up scan.

const scan = (node: string, over: Partial<QueueScan> = {}): QueueScan => ({
  queue: `vm-node-{${node}}`,
  waiting: 0,
  paused: 0,
  active: 0,
  delayed: 0,
  prioritized: 0,
  completed: 0,
  failed: 0,
  workerCheckTtlMs: 5_000,
  ...over,
});
const snap = (queues: QueueScan[]) => ({ at: Date.parse('2026-12-04T08:00:00Z'), tookMs: 12, queues });
const q = (over: Record<string, unknown> = {}) => FleetQuery.parse(over);

describe('agent presence from the stalled-check key', () => {
  it('is seen while a worker checks, missing when jobs wait or hang active without one, idle otherwise', () => {
    expect(agentState(scan('a', { waiting: 3 }))).toBe('seen');
    expect(agentState(scan('a', { waiting: 3, workerCheckTtlMs: -2 }))).toBe('missing');
    expect(agentState(scan('a', { active: 1, workerCheckTtlMs: -2 }))).toBe('missing');
    expect(agentState(scan('a', { prioritized: 1, workerCheckTtlMs: -2 }))).toBe('missing');
    // Parked (delayed) and finished jobs need no agent now.
    expect(agentState(scan('a', { delayed: 2, failed: 4, completed: 9, workerCheckTtlMs: -2 }))).toBe('idle');
    expect(agentState(scan('a', { workerCheckTtlMs: -1 }))).toBe('seen');
  });
});

describe('the fleet overview', () => {
  const queues = [
    scan('n-a', { waiting: 2, active: 1, completed: 5 }),
    scan('n-b', { delayed: 1, failed: 2 }),
    scan('n-c', { completed: 7 }),
    scan('n-d', { waiting: 4, workerCheckTtlMs: -2 }),
    scan('n-e', { failed: 1 }),
    { ...scan('x'), queue: 'vm-cluster-{cluster}', waiting: 1, workerCheckTtlMs: -2 },
  ];
  const controls = {
    parked: [
      {
        jobId: 'j1',
        queue: 'vm-node-{n-b}',
        runbook: 'rbd-unmap',
        node: 'n-b',
        reason: 'approval' as const,
        why: 'w',
        since: '2026-12-04T07:00:00Z',
      },
    ],
    tripped: [
      { breaker: 'node/n-e', why: 'too many', at: '2026-12-04T07:30:00Z', count: 3, cap: 3 },
      { breaker: 'storm', why: 'storm', at: '2026-12-04T07:31:00Z', count: 9, cap: 8 },
    ],
    pauses: { nodes: { 'n-z': { by: 'dora', why: 'SAN work', at: '2026-12-04T07:00:00Z' } }, runbooks: {} },
  };

  it('shows the nodes with something open (jobs, a missing agent, a breaker, a pause), by open jobs', () => {
    const p = fleetPage(snap(queues), controls, q());
    expect(p.rows.map((r) => [r.node, r.open])).toEqual([
      ['n-d', 4],
      ['n-a', 3],
      ['n-b', 1],
      ['n-e', 0],
      ['n-z', 0],
    ]);
    expect(p).toMatchObject({ total: 5, nodes: 6, agentsMissing: 1, nodesWithOpen: 5, clusterBreakers: [{ breaker: 'storm' }] });
    expect(p.rows.find((r) => r.node === 'n-b')).toMatchObject({ depth: 1, parked: 1, failed: 2, agent: 'seen' });
    expect(p.rows.find((r) => r.node === 'n-e')?.breaker?.why).toBe('too many');
    expect(p.rows.find((r) => r.node === 'n-z')).toMatchObject({ agent: 'no queue', paused: { by: 'dora' } });
    expect(p.clusterQueue).toMatchObject({ depth: 1, agent: 'missing' });
  });

  it('sorts by any column either way, ties by node name, and pages with offset and limit', () => {
    const all = (over: Record<string, unknown>) => fleetPage(snap(queues), controls, q({ show: 'all', ...over })).rows.map((r) => r.node);
    expect(all({ sort: 'node' })).toEqual(['n-a', 'n-b', 'n-c', 'n-d', 'n-e', 'n-z']);
    expect(all({ sort: 'node', dir: 'desc' })).toEqual(['n-z', 'n-e', 'n-d', 'n-c', 'n-b', 'n-a']);
    expect(all({ sort: 'failed' })).toEqual(['n-b', 'n-e', 'n-a', 'n-c', 'n-d', 'n-z']);
    expect(all({ sort: 'agent' })[0]).toBe('n-d');
    expect(all({ sort: 'breaker' })[0]).toBe('n-e');
    expect(all({ sort: 'depth', dir: 'asc' })).toEqual(['n-c', 'n-e', 'n-z', 'n-b', 'n-a', 'n-d']);
    expect(all({ sort: 'node', offset: 2, limit: 2 })).toEqual(['n-c', 'n-d']);
    expect(all({ sort: 'node', offset: 6 })).toEqual([]);
    expect(fleetPage(snap(queues), controls, q({ show: 'all' })).total).toBe(6);
  });

  it('refuses a sort or a page it does not know', () => {
    expect(FleetQuery.safeParse({ sort: 'memory' }).success).toBe(false);
    expect(FleetQuery.safeParse({ limit: '501' }).success).toBe(false);
    expect(FleetQuery.safeParse({ offset: '-1' }).success).toBe(false);
  });

  it('pages 5,000 nodes from one snapshot without a node twice or missed', () => {
    const many = Array.from({ length: 5_000 }, (_, i) => scan(`m-${i}`, { waiting: i % 7, failed: i % 3 }));
    const seen: string[] = [];
    for (let offset = 0; offset < 5_000; offset += 500)
      seen.push(...fleetPage(snap(many), {}, q({ show: 'all', sort: 'depth', offset, limit: 500 })).rows.map((r) => r.node));
    expect(seen).toHaveLength(5_000);
    expect(new Set(seen).size).toBe(5_000);
  });

  it('sums the counts by state over every queue', () => {
    expect(stateCounts(snap(queues))).toEqual({
      queues: 6,
      counts: { waiting: 7, active: 1, delayed: 1, prioritized: 0, paused: 0, completed: 12, failed: 3 },
    });
  });
});
