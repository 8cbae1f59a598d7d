export * from './incident.ts';
export * from './incident-index.ts';
export * from './incident-list.ts';
export * from './state-counts.ts';
