export { createLocalPvPlaceholder } from './handler.ts';
export { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels } from './node-labels.ts';
export { PlaceholderStore } from './record-store.ts';
