import { z } from 'zod';
import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import type { Pauses } from '../../adapters/controls/controls-store.ts';
import type { ParkedJob, TripRecord } from '../../core/controls/records.ts';
import { agentState, type AgentState } from './agent-state.ts';
import type { FleetSnapshot } from './fleet-snapshot.ts';

// The fleet overview: one row per node, from one fleet snapshot (every queue's counts
// and its worker's last sign of life) and the controls (parked jobs, tripped breakers, pauses),
// sorted and paged on the server. A request's work is a pass over the snapshot's rows (10,000
// at 10,000 nodes: a few milliseconds) and a page of `limit`, never a Redis call per node.

export const FLEET_SORTS = ['node', 'open', 'depth', 'active', 'parked', 'failed', 'agent', 'breaker'] as const;
export type FleetSort = (typeof FLEET_SORTS)[number];

export const FleetQuery = z.object({
  sort: z.enum(FLEET_SORTS).default('open'),
  dir: z.enum(['asc', 'desc']).optional(),
  /** `open`: nodes with something open (jobs not finished, a missing agent, a tripped breaker, a pause); `all`: every node with a queue. */
  show: z.enum(['open', 'all']).default('open'),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});
export type FleetQuery = z.infer<typeof FleetQuery>;

export interface FleetRow {
  node: string;
  queue?: string;
  /** Jobs not finished: waiting, prioritized, paused, delayed (parked included), active. */
  open: number;
  /** Jobs not started yet: waiting, prioritized, paused, delayed. */
  depth: number;
  active: number;
  /** Jobs parked on a control (approval, pause, breaker, evidence). */
  parked: number;
  failed: number;
  completed: number;
  agent: AgentState | 'no queue';
  /** The node's tripped breaker, if any. */
  breaker?: { why: string; at: string };
  paused?: { by: string; at: string };
}

export interface FleetPage {
  rows: FleetRow[];
  /** Rows that match `show` (what the pages page through). */
  total: number;
  /** Every node with a queue, a breaker or a pause. */
  nodes: number;
  agentsMissing: number;
  nodesWithOpen: number;
  /** The cluster-wide breakers (cluster, storm) that are tripped. */
  clusterBreakers: TripRecord[];
  clusterPaused?: { by: string; at: string };
  /** The cluster queue's counts and agent (the cluster worker). */
  clusterQueue?: Omit<FleetRow, 'node'>;
  snapshotAt: string;
  scanMs: number;
  query: FleetQuery;
}

export interface FleetControls {
  parked?: readonly ParkedJob[];
  tripped?: readonly TripRecord[];
  pauses?: Pauses;
}

const AGENT_RANK: Record<FleetRow['agent'], number> = { missing: 3, idle: 1, 'no queue': 0, seen: 2 };
const DEFAULT_DIR: Record<FleetSort, 'asc' | 'desc'> = {
  node: 'asc',
  open: 'desc',
  depth: 'desc',
  active: 'desc',
  parked: 'desc',
  failed: 'desc',
  agent: 'desc',
  breaker: 'desc',
};

export const fleetDir = (q: Pick<FleetQuery, 'sort' | 'dir'>): 'asc' | 'desc' => q.dir ?? DEFAULT_DIR[q.sort];

function key(r: FleetRow, s: FleetSort): number | string {
  switch (s) {
    case 'node':
      return r.node;
    case 'agent':
      return AGENT_RANK[r.agent];
    case 'breaker':
      return r.breaker ? 1 : 0;
    default:
      return r[s];
  }
}

export function fleetPage(snap: FleetSnapshot, c: FleetControls, q: FleetQuery): FleetPage {
  const parkedBy = new Map<string, number>();
  for (const p of c.parked ?? []) if (p.node) parkedBy.set(p.node, (parkedBy.get(p.node) ?? 0) + 1);
  const tripped = new Map<string, TripRecord>();
  const clusterBreakers: TripRecord[] = [];
  for (const t of c.tripped ?? []) {
    if (t.breaker.startsWith('node/')) tripped.set(t.breaker.slice(5), t);
    else clusterBreakers.push(t);
  }
  const rows = new Map<string, FleetRow>();
  let clusterQueue: FleetPage['clusterQueue'];
  for (const s of snap.queues) {
    const node = nodeOfQueue(s.queue);
    const depth = s.waiting + s.prioritized + s.paused + s.delayed;
    const row = {
      queue: s.queue,
      open: depth + s.active,
      depth,
      active: s.active,
      parked: 0,
      failed: s.failed,
      completed: s.completed,
      agent: agentState(s),
    } as const;
    if (node === undefined) {
      clusterQueue = { ...row, parked: (c.parked ?? []).filter((p) => p.queue === s.queue).length };
      continue;
    }
    rows.set(node, { node, ...row });
  }
  // A breaker or a pause on a node that has no queue (yet) is still the operator's business.
  const bare = (node: string): FleetRow => ({ node, open: 0, depth: 0, active: 0, parked: 0, failed: 0, completed: 0, agent: 'no queue' });
  for (const node of tripped.keys()) if (!rows.has(node)) rows.set(node, bare(node));
  for (const node of Object.keys(c.pauses?.nodes ?? {})) if (!rows.has(node)) rows.set(node, bare(node));
  let agentsMissing = 0;
  let nodesWithOpen = 0;
  const shown: FleetRow[] = [];
  for (const r of rows.values()) {
    r.parked = parkedBy.get(r.node) ?? 0;
    const t = tripped.get(r.node);
    if (t) r.breaker = { why: t.why, at: t.at };
    const p = c.pauses?.nodes[r.node];
    if (p) r.paused = { by: p.by, at: p.at };
    if (r.agent === 'missing') agentsMissing += 1;
    const open = r.open > 0 || r.agent === 'missing' || r.breaker !== undefined || r.paused !== undefined;
    if (open) nodesWithOpen += 1;
    if (q.show === 'all' || open) shown.push(r);
  }
  const dir = fleetDir(q) === 'asc' ? 1 : -1;
  // Ties by node name, always ascending: a stable order makes offset paging of one snapshot exact.
  shown.sort((a, b) => {
    const ka = key(a, q.sort);
    const kb = key(b, q.sort);
    if (ka !== kb) return (ka < kb ? -1 : 1) * dir;
    return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
  });
  return {
    rows: shown.slice(q.offset, q.offset + q.limit),
    total: shown.length,
    nodes: rows.size,
    agentsMissing,
    nodesWithOpen,
    clusterBreakers,
    ...(c.pauses?.cluster ? { clusterPaused: { by: c.pauses.cluster.by, at: c.pauses.cluster.at } } : {}),
    ...(clusterQueue ? { clusterQueue } : {}),
    snapshotAt: new Date(snap.at).toISOString(),
    scanMs: snap.tookMs,
    query: q,
  };
}
