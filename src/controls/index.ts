export * from './keys.ts';
export * from './records.ts';
export * from './effective-mode.ts';
export * from './controls-store.ts';
export * from './approval-store.ts';
export * from './breakers.ts';
export * from './status.ts';
export * from './operator-actions.ts';
