export * from './access-reviews.ts';
export * from './cached-reviews.ts';
export * from './failed-auth-limiter.ts';
export * from './operator.ts';
export * from './operator-auth.ts';
export * from './permissions.ts';
export * from './token-match.ts';
export * from './session-store.ts';
