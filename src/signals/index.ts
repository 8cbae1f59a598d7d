export * from './signal.ts';
export * from './ignored.ts';
