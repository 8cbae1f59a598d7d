import { agentRuns, writeAgentRuns } from '../../src/adapters/jobstore/agent-runs.ts';
import type { RunbookName } from '../../src/core/catalogue/jobs.ts';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';

// At its start a worker says on its queue what it runs (src/adapters/jobstore/agent-runs.ts): a
// receiver stores a job of a runbook or evidence source newer than every supported release only
// where the queue's agent announced it (src/control/ingest/agent-gate.ts). Until the write
// succeeded (Redis away at start) it is tried again every `retryMs`. It is written again each time
// the connection comes back: a Redis that restarted without its data (or a failover to a replica
// that never had the key) would otherwise hold every newer job for this queue until the process
// restarts. Nothing of it changes while the process runs, so a write more is harmless.

export interface AnnounceRunsOptions {
  redis: RedisConnection;
  prefix: string;
  queue: string;
  runbooks: readonly RunbookName[];
  /** NODE_NAME, or `cluster-worker`. */
  by: string;
  retryMs: number;
  log: Logger;
}

/** Starts announcing; the returned function stops the retries. */
export function announceRuns(o: AnnounceRunsOptions): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let warned = false;
  const attempt = (): void => {
    writeAgentRuns(o.redis, o.prefix, o.queue, agentRuns(o.runbooks, o.by, new Date())).then(
      () => {
        if (warned) o.log.info({ queue: o.queue }, 'announced the runbooks this worker runs');
      },
      (err: Error) => {
        if (!warned)
          o.log.warn(
            { queue: o.queue, err: err.message },
            'could not announce the runbooks this worker runs; receivers hold jobs of newer runbooks for it until it does',
          );
        warned = true;
        if (stopped) return;
        timer = setTimeout(attempt, o.retryMs);
        timer.unref();
      },
    );
  };
  const again = (): void => {
    if (stopped) return;
    clearTimeout(timer);
    attempt();
  };
  attempt();
  o.redis.on('ready', again);
  return () => {
    stopped = true;
    clearTimeout(timer);
    o.redis.off('ready', again);
  };
}
