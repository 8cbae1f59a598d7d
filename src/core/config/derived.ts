import { queueWindowMs, type Placement } from '../catalogue/policy.ts';

// Values computed once from settings, so that no consumer recomputes them from the pieces.

/** The deduplication window of each queue placement, in ms: DEDUP_WINDOW_SECONDS when set, else the runbooks' (catalogue/policy.ts). */
export type DedupWindows = Readonly<Record<Placement, number>>;

export const dedupWindows = (overrideSeconds?: number): DedupWindows => ({
  node: queueWindowMs('node', overrideSeconds),
  cluster: queueWindowMs('cluster', overrideSeconds),
});

export interface Derived {
  dedupWindowMs: DedupWindows;
}
