import { presenceKey, presenceTtlMs } from '../../src/adapters/jobstore/agent-presence.ts';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';

// A worker's sign of life on its queue, for the console's fleet page and the cluster worker's
// no-agent check (src/adapters/jobstore/agent-presence.ts reads it). Renewed every half interval with a
// lifetime of two intervals, so a live worker's key lapses only when two renewals in a row are
// late. One SET per worker per half interval (at 10,000 agents and LOCK_DURATION_MS 30 s: 667 a
// second, each O(1)); a renewal that fails is tried again at the next one.

export interface PresenceBeatOptions {
  redis: RedisConnection;
  prefix: string;
  queue: string;
  /** The worker's stalled interval (LOCK_DURATION_MS): the beat renews every half of it. */
  intervalMs: number;
  /** Whether the worker still takes jobs: a closing or stopped worker shows no life. */
  running: () => boolean;
  log: Logger;
}

/** Starts renewing at once; the returned function stops it (the key then lapses by itself). */
export function startPresenceBeat(o: PresenceBeatOptions): () => void {
  const key = presenceKey(o.prefix, o.queue);
  const ttl = presenceTtlMs(o.intervalMs);
  let failing = false;
  const beat = (): void => {
    if (!o.running()) return;
    o.redis.set(key, String(Date.now()), 'PX', ttl).then(
      () => {
        if (failing) o.log.info({ queue: o.queue }, 'presence renewed again');
        failing = false;
      },
      (err: Error) => {
        // Once per outage: the connection's own logs say why it is down.
        if (!failing)
          o.log.warn({ queue: o.queue, err: err.message }, "could not renew this worker's presence; the fleet page may show it missing until the next renewal");
        failing = true;
      },
    );
  };
  beat();
  const timer = setInterval(beat, Math.max(1, Math.floor(o.intervalMs / 2)));
  timer.unref();
  return () => clearInterval(timer);
}
