export * from './signal.ts';
export * from './ignored.ts';
export * from './boot-identity.ts';
export * from './kubelet-orphan-line.ts';
