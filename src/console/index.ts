export * from './incident.ts';
export * from './incident-index.ts';
export * from './incident-list.ts';
export * from './state-counts.ts';
export * from './agent-presence.ts';
export * from './fleet.ts';
export * from './fleet-snapshot.ts';
export * from './queue-scan.ts';
