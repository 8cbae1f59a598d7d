export { createResidualMultipathCleanup } from './handler.ts';
export { InMemoryAttachedVolumes, type AttachedVolumes } from './attached-volumes.ts';
export { DEFAULT_VICTIM_OPENERS } from './policy.ts';
