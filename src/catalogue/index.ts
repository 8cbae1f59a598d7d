export * from './names.ts';
export * from './keys.ts';
export * from './evidence.ts';
export * from './jobs.ts';
export * from './policy.ts';
export * from './queues.ts';
export * from './result.ts';
export * from './job-stats.ts';
