export * from './signal.ts';
export * from './ignored.ts';
export * from './boot-identity.ts';
