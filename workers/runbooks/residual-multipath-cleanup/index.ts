export { createResidualMultipathCleanup } from './handler.ts';
export { InMemoryAttachedVolumes } from './attached-volumes.ts';
export { DEFAULT_VICTIM_OPENERS } from './policy.ts';
