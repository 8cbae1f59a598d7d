import type { RunbookName } from '../../src/core/catalogue/jobs.ts';

// The runbooks the node agent carries, by name only: main.ts registers them at start and loads
// their code on the first job. registry.ts builds exactly these (its return type says so).
export const NODE_RUNBOOKS = [
  'local-pv-placeholder',
  'residual-multipath-cleanup',
  'rbd-unmap',
  'orphaned-pod-volumes',
  'readonly-filesystem-recovery',
] as const satisfies readonly RunbookName[];
export type NodeRunbookName = (typeof NODE_RUNBOOKS)[number];
