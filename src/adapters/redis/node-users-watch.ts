import { errText } from './redis-servers.ts';
import type { ApplyReport } from './node-user-servers.ts';

// When the per-node users are applied again without being asked (node-redis-users.ts watch()):
// after a topology change, a burst of events gathered into one full pass, and every
// `reconcileMs` a cheap reconcile, the safety net for a server that restarted (it lost them) or
// was down (it missed a removal).

export interface NodeUsersWatchOptions {
  /** Told of each topology change (RedisServers.onChange). */
  onChange(listener: (why: string) => void): void;
  reapplyAll(): Promise<ApplyReport>;
  reconcile(): Promise<ApplyReport>;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  reconcileMs: number;
  settleMs: number;
}

/** Starts at once with a full pass; stop() ends it (a pass under way finishes). */
export function watchNodeUsers(o: NodeUsersWatchOptions): { stop(): void } {
  let stopped = false;
  let settleTimer: NodeJS.Timeout | undefined;
  let reconcileTimer: NodeJS.Timeout | undefined;
  const settle = (why: string): void => {
    if (stopped || settleTimer) return;
    settleTimer = setTimeout(() => {
      settleTimer = undefined;
      o.reapplyAll().then(
        (r) => o.log.info({ why, applied: r.applied.length, failed: r.failed }, 'node Redis users applied again after a topology change'),
        (err: unknown) => o.log.warn({ why, error: errText(err) }, 'node Redis users: applying again after a topology change failed'),
      );
    }, o.settleMs);
  };
  const tick = (): void => {
    reconcileTimer = setTimeout(() => {
      o.reconcile()
        .then(
          (r) => {
            if (r.failed.length > 0) o.log.warn({ failed: r.failed }, 'node Redis users: reconcile did not reach every server');
          },
          (err: unknown) => o.log.warn({ error: errText(err) }, 'node Redis users: reconcile failed'),
        )
        .finally(() => {
          if (!stopped) tick();
        });
    }, o.reconcileMs);
  };
  settle("watch started: every user gets this release's rules");
  o.onChange(settle);
  tick();
  return {
    stop() {
      stopped = true;
      clearTimeout(settleTimer);
      clearTimeout(reconcileTimer);
    },
  };
}
