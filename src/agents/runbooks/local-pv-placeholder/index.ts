export { createLocalPvPlaceholder, type LocalPvPlaceholderDeps } from './handler.ts';
export { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels, type NodeLabels, type OptInLabel } from './node-labels.ts';
export { PlaceholderStore } from './record-store.ts';
export { PlaceholderRecord } from './record.ts';
export { plan, pickLoop, PLACEHOLDER_BYTES, FIRST_LOOP } from './plan.ts';
export type { PlaceholderFacts, PathState, Sighting } from './facts.ts';
export type { PlaceholderStep } from './step.ts';
