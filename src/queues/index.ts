export * from './dispatcher.ts';
export * from './job-reader.ts';
export * from './known-queues.ts';
