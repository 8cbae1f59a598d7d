export * from './errors.ts';
export * from './runbook.ts';
export * from './journal.ts';
export * from './run-runbook.ts';
export * from './runbook-failed-error.ts';
