export * from './lookups.ts';
export * from './client.ts';
export { KubeLookups, type KubeApis } from './api/kube-lookups.ts';
export { lookupsFromObjects } from './api/objects-to-lookups.ts';
