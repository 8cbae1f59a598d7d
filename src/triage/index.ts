export * from './triage.ts';
