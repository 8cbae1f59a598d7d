export { createRbdUnmap } from './handler.ts';
export { InMemoryNodePods } from './node-pods.ts';
export type { UnmapPolicy } from './policy.ts';
export { podUidOfCgroup } from '../../host/proc-facts.ts';
export { parseMountinfo } from '../../host/mountinfo.ts';
export { parseShowmappedJson, parseShowmappedText } from './showmapped.ts';
export { isBusy, isNotMapped } from './unmap-error.ts';
