import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Cluster } from 'ioredis';
import { failureText, shouldRetry, TransientError } from '../../core/errors.ts';
import { JobParked, type ConsumeOptions, type CounterBatch, type JobConsumer, type JobHandler, type TakenJob } from '../../core/jobs/job-store.ts';
import type { Logger } from '../observability/logger.ts';
import { execAll } from '../redis/exec-all.ts';
import { storedJob } from './bull-job-store.ts';
import { queueKeys } from './bullmq-keys.ts';
import type { RedisConnection } from '../redis/redis.ts';

// A queue's consumer on BullMQ: one job at a time, the handler's errors turned into BullMQ's
// retry terms (core/errors.ts), parking as BullMQ's delayed set, and the queue's marker put back
// after a reconnect.

/** Where a store's consumers run: its command connection (BullMQ opens each consumer's blocking one from it), prefix and log. */
export interface ConsumerSite {
  connection: RedisConnection;
  prefix: string;
  log: Logger;
}

/** An idle consumer blocks on its queue's marker this long per round trip (BullMQ's drainDelay). */
const IDLE_BLOCK_SECONDS = 30;

/** A fetch that failed on a dropped connection is tried again after this (BullMQ's runRetryDelay). */
const FETCH_RETRY_MS = 2_000;

/** After a reconnect, the queue's marker is put back this long after (twice: see rearmAfterReconnect). */
const REARM_AFTER_MS = [1_000, 5_000] as const;

/**
 * A worker waits for jobs by popping its queue's marker (BZPOPMIN, on BullMQ's blocking
 * connection) and then fetching (a script on the command connection). When a connection drops
 * between the two (a Sentinel failover, a Redis restart: the pop ran on the server, its answer or
 * the fetch was lost), the marker is gone while jobs wait, and BullMQ blocks on the empty marker
 * for its whole drainDelay unless another job arrives (test/int/adapters/redis/redis-sentinel.int.test.ts: 41
 * jobs waiting, no marker, the agent idle after a failover). So whenever either connection comes
 * back, the marker is put back (BullMQ's own "jobs may be waiting" marker, ZADD <marker> 0 "0");
 * twice, since the other connection may come back later and pop the first. A marker too many
 * costs one fetch that finds nothing.
 */
function rearmAfterReconnect(connection: RedisConnection, blocking: Pick<Worker, 'on' | 'off'>, markerKey: string, log: Logger): () => void {
  const timers = new Set<NodeJS.Timeout>();
  const rearm = (): void => {
    for (const ms of REARM_AFTER_MS) {
      const t = setTimeout(() => {
        timers.delete(t);
        connection.zadd(markerKey, 0, '0').catch((err: Error) => log.debug({ err: err.message }, 'could not put the queue marker back'));
      }, ms);
      timers.add(t);
    }
  };
  /** Re-arms on every `ready` after the first (the first is the start, not a reconnect). */
  const afterFirst = (readyBefore: boolean): (() => void) => {
    let seen = readyBefore;
    return () => {
      if (seen) rearm();
      seen = true;
    };
  };
  const onCommandReady = afterFirst(connection.status === 'ready');
  const onBlockingReady = afterFirst(false);
  connection.on('ready', onCommandReady);
  blocking.on('ready', onBlockingReady);
  return () => {
    connection.off('ready', onCommandReady);
    blocking.off('ready', onBlockingReady);
    for (const t of timers) clearTimeout(t);
  };
}

/** What a BullMQ processor throws for a handler's error: UnrecoverableError ends retries, anything else is retried. */
function forBullmq(err: unknown): Error {
  if (err instanceof JobParked) return new DelayedError();
  if (shouldRetry(err)) return err instanceof Error ? err : new TransientError(String(err));
  return new UnrecoverableError(failureText(err));
}

// long because: BullMQ's Worker options, each with the reason for its value, and the job view handlers get
export function consumeJobs(site: ConsumerSite, o: ConsumeOptions, handler: JobHandler): JobConsumer {
  const { connection, prefix, log } = site;
  const keys = queueKeys(prefix, o.queue);

  const taken = (job: Job, token: string | undefined): TakenJob => ({
    ...storedJob(job),
    queue: o.queue,
    /**
     * One pipeline on a single Redis: the log is BullMQ's list of the job (`<job key>:logs`),
     * written while this consumer holds the job's lock, so the job is there (what BullMQ's addLog
     * script checks first). On a Cluster the log (the queue's slot) and the counters are on
     * different slots: sent at once.
     */
    log: async (line, counters) => {
      if (!counters) {
        await job.log(line);
        return;
      }
      if (connection instanceof Cluster) {
        const p = connection.pipeline();
        counters(p as CounterBatch);
        await Promise.all([job.log(line), execAll(p)]);
        return;
      }
      const p = connection.pipeline().rpush(keys.logs(job.id ?? ''), line);
      counters(p as CounterBatch);
      await execAll(p);
    },
    setProgress: async (progress) => {
      await job.updateProgress(progress);
    },
    park: async (atMs) => {
      await job.moveToDelayed(atMs, token);
      throw new JobParked();
    },
  });

  const worker = new Worker(
    o.queue,
    async (job: Job, token?: string) => {
      try {
        return await handler(taken(job, token));
      } catch (err) {
        throw forBullmq(err);
      }
    },
    {
      connection,
      prefix,
      // No full INFO per connection at start (BullMQ's version check): after a power loss 10,000
      // agents connecting at once each sent two. docs/redis.md states the Redis versions we run on.
      skipVersionCheck: true,
      concurrency: 1,
      // A new job wakes an idle consumer at once whatever this is, so it costs no latency; at fleet
      // scale the idle wake-ups are most of Redis's idle load (bench/fleet.ts). BullMQ ends the wait
      // after this + 1 s on a connection that died silently.
      drainDelay: IDLE_BLOCK_SECONDS,
      lockDuration: o.lockDurationMs,
      stalledInterval: o.lockDurationMs,
      removeOnComplete: o.keepFinished,
      removeOnFail: o.keepFinished,
      // A job that stalled (its consumer died) is taken again; after this many stalls it fails, so
      // a runbook that kills its own agent cannot loop forever.
      maxStalledCount: 2,
      // Commands wait in the offline queue while the connection is down, so this is one retry per
      // drop, not a loop against a dead Redis.
      runRetryDelay: FETCH_RETRY_MS,
      autorun: true,
    },
  );
  worker.on('error', (err) => log.error({ err: err.message }, 'worker error'));
  worker.on('stalled', (id) => log.warn({ jobId: id }, 'job stalled (its worker stopped); it will be taken again'));
  const stopRearming = rearmAfterReconnect(connection, worker, keys.marker, log);
  return {
    running: () => worker.isRunning(),
    ready: async () => {
      await worker.waitUntilReady();
    },
    onFinished: (listener) => {
      worker.on('completed', (job) => listener(job.id ?? '', 'completed'));
      worker.on('failed', (job) => listener(job?.id ?? '', 'failed'));
    },
    close: async () => {
      stopRearming();
      await worker.close();
    },
  };
}
