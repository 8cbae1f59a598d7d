export * from './alertmanager.ts';
export * from './kube-event.ts';
export * from './kube-events.ts';
export * from './classify-event.ts';
export * from './event-trust.ts';
export * from './npd.ts';
