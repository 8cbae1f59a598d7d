import { DelayedError, Worker, UnrecoverableError, type Job } from 'bullmq';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { RemediationJob, type RunbookName } from '../../core/catalogue/jobs.ts';
import { Cluster } from 'ioredis';
import { queueFinished, queueStatsKey, recordFinished, recordUntrusted } from '../../adapters/stats/job-stats.ts';
import { execAll } from '../../adapters/redis/exec-all.ts';
import type { Sealer } from '../../core/trust/seal.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import type { Seal, Untrusted } from '../../core/trust/seal.ts';
import { issuerMayNot, verifyJobSeal } from '../../core/trust/work.ts';
import type { SeenWork } from './seen-work.ts';
import type { ControlMemory, ControlTrust } from '../../core/controls/sealed-records.ts';
import type { Mode, RunbookResult } from '../../core/catalogue/result.ts';
import { RedisConnections } from '../../adapters/redis/redis-connections.ts';
import type { RedisTarget } from '../../adapters/redis/redis-target.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../../adapters/observability/worker-metrics.ts';
import type { RunbookContext, RunbookHandler, RunbookRegistry } from '../runbooks/registry.ts';
import { eventSubject, type JobEventSink } from './job-events.ts';
import { PermanentError, RefusedError, forBullmq, shouldRetry } from './errors.ts';
import { destructiveEvidenceLine } from './evidence.ts';
import { ParkedError, type Parking, type PlanView } from './gate.ts';
import { keepFinished } from '../../core/catalogue/policy.ts';
import { placementOfQueue } from '../../core/catalogue/queues.ts';
import { createJobControls, type JobControls, type JobControlsOptions } from './job-controls.ts';
import { startPresenceBeat } from './presence-beat.ts';

// One BullMQ worker that runs registered runbooks: shared by the node agent (its node's queue)
// and the cluster worker (the cluster queue). It parses every job again (Redis is a boundary),
// runs one job at a time, and turns errors into retry decisions in one place.

export interface RunbookWorkerOptions {
  queue: string;
  /** Where Redis is (a URL: a single server). */
  redis: RedisTarget | string;
  prefix: string;
  ranOn: string;
  /** Names its Redis connections in CLIENT LIST (`volume-medic:<process>:worker`); default `ranOn`. */
  process?: string;
  registry: RunbookRegistry;
  modeOf: (runbook: RunbookName) => Mode;
  /** Rejects jobs that are not for this worker (a node agent only runs its node's jobs). */
  accepts: (job: RemediationJob) => string | undefined;
  lockDurationMs: number;
  /**
   * How long finished jobs of this queue are kept (its deduplication window, catalogue/policy.ts
   * `keepFinished`): BullMQ's Worker removeOnComplete/removeOnFail, for the jobs that do not say
   * (ours do not, since issue 21; a job stored by an older receiver still carries its own).
   * Default: the policy's window of the queue's placement (DEDUP_WINDOW_SECONDS not set).
   */
  keepFinished?: { age: number };
  log: Logger;
  /**
   * Operator controls (modes from the API, pause, approval, breakers), read from Redis on the
   * worker's connection; without them the worker runs in configuration's modes, ungated.
   */
  controls?: Omit<JobControlsOptions, 'redis' | 'prefix' | 'log' | 'queue'>;
  /** Kubernetes Events for job start, refusal, success and failure (cluster access only). */
  events?: JobEventSink;
  /**
   * Sealed work: every job's seal is verified (issuer's key, bound to this queue and job id, not
   * expired, an issuer allowed to ask for this runbook, not a replay of finished work) before
   * anything else runs. Without it (tests of the runbooks alone) jobs are taken as they are.
   */
  trust?: WorkTrust;
  /** Redis refused this worker's credentials (its Redis user gone): an enrolled agent enrols again. */
  onRedisAuthRefused?: () => void;
}

export interface WorkTrust {
  ring: Keyring;
  /** ALLOW_UNSIGNED_WORK: a job without a seal is run (a bad seal is still refused). */
  allowUnsigned: boolean;
  seen: SeenWork;
  /** The newest mode and pause records accepted, kept across restarts (STATE_DIR); default: memory. */
  controls?: ControlMemory;
  /** What controls are verified with (the control keys' certificates); default `ring`. */
  controlRing?: Keyring;
  /** Numbers and seals this worker's audit entries (its work key of its queue): the receiver checks them. */
  auditSealer?: Sealer;
  /** A job came sealed with a key this process does not hold (an enrolled consumer then enrols again: a root may have rotated). */
  onUnknownKey?: () => void;
  now?: () => number;
}

type TrustCheck = { seal?: Seal; refused?: undefined } | { refused: { reason: Untrusted; detail: string } };

/** BullMQ's drainDelay for our workers: see the Worker options below. */
const IDLE_BLOCK_SECONDS = 30;

/** BullMQ's runRetryDelay for our workers: see the Worker options below. */
const FETCH_RETRY_MS = 2_000;

/** After a reconnect, the queue's marker is put back this long after (twice: see rearmAfterReconnect). */
const REARM_AFTER_MS = [1_000, 5_000] as const;

/**
 * A worker waits for jobs by popping its queue's marker (BZPOPMIN, on BullMQ's blocking
 * connection) and then fetching (a script on the command connection). When a connection drops
 * between the two (a Sentinel failover, a Redis restart: the pop ran on the server, its answer or
 * the fetch was lost), the marker is gone while jobs wait, and BullMQ blocks on the empty marker
 * for its whole drainDelay (30 s here) unless another job arrives. Seen in
 * test/int/redis-sentinel.int.test.ts: 41 jobs waiting, no marker, the agent idle after a
 * failover; and again, under load, with the blocking connection back after the command one's
 * re-arms had fired. So whenever either connection comes back (the command connection's `ready`,
 * the worker's `ready`: BullMQ's blocking connection), the marker is put back (BullMQ's own "jobs
 * may be waiting" marker, ZADD <marker> 0 "0"); twice, since the other connection may come back
 * later and pop the first. A marker too many costs one fetch that finds nothing.
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

/** How long a parked job waits before it looks again when nothing says otherwise (no controls). */
const DEFAULT_RECHECK_MS = 30_000;

export interface RunbookWorker {
  worker: Worker;
  /** The worker's command connection (not the blocking one): the agent's own checks enqueue on it, no third connection. */
  connection: RedisConnection;
  /** Its owner, which brings it back if it ends (BullMQ brings back its blocking connection itself). */
  connections: RedisConnections;
  /** This worker's own counts of finished and refused work, for its process's /metrics. */
  metrics: WorkerMetrics;
  /** Taking jobs: started and not closing (the probe server's /readyz). */
  running(): boolean;
  close(): Promise<void>;
}

export function createRunbookWorker(opts: RunbookWorkerOptions): RunbookWorker {
  const connections = new RedisConnections({
    target: opts.redis, process: opts.process ?? opts.ranOn, log: opts.log.child({ component: 'redis' }),
    ...(opts.onRedisAuthRefused ? { onAuthRefused: opts.onRedisAuthRefused } : {}),
  });
  const connection = connections.open('worker', 'worker');
  const metrics = createWorkerMetrics();
  // Its statistics under its own queue (a node's Redis user may write no other's).
  const stats = queueStatsKey(opts.prefix, opts.queue);
  const shutdown = new AbortController();
  const controls: JobControls | undefined = opts.controls
    ? createJobControls({ ...opts.controls, redis: connection, prefix: opts.prefix, queue: opts.queue, log: opts.log, ...(opts.trust ? { trust: controlTrust(opts.trust) } : {}) })
    : undefined;

  const processor = async (job: Job, token?: string): Promise<RunbookResult> => {
    const started = Date.now();
    let modeWhy: string | undefined;
    const parsed = RemediationJob.safeParse(job.data);
    const runbook = parsed.success ? parsed.data.runbook : String(job.name);
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    // Fire and forget: the recorder never throws, and the API server's latency is not the job's.
    const subject = parsed.success && opts.events ? eventSubject(parsed.data) : undefined;
    const event = (outcome: 'started' | 'refused' | 'succeeded' | 'failed', message: string, mode?: Mode): void => {
      if (!subject || !opts.events) return;
      void opts.events.recordJobEvent({ jobId: job.id ?? '', runbook, outcome, regarding: subject, message, ...(mode ? { mode } : {}) });
    };
    // The attempt's one log line says where and in which mode it ran, and how it ended; with
    // the job statistics when the job ends (one round trip: bench/job-lifecycle.ts).
    let attemptLine = `attempt ${job.attemptsMade + 1} on ${opts.ranOn}`;
    const finish = (outcome: string, line: string): Promise<void> => {
      metrics.finished.inc({ runbook, outcome });
      return finishedAndLogged(job, runbook, outcome, (Date.now() - started) / 1000, `${attemptLine}: ${line}`).catch((err: Error) => {
        opts.log.warn({ err: err.message }, 'could not record job statistics or the job log');
      });
    };
    // Before anything else, even the job's own Events: untrusted data names no object we write about.
    const trusted = checkTrust(job, parsed.success ? parsed.data : undefined);
    if (trusted.refused) return refuseUntrusted(job, parsed.success ? parsed.data.runbook : 'unknown', trusted.refused);
    const sealed = trusted.seal;
    const done = (): void => {
      if (sealed) opts.trust?.seen.markFinished(sealed.mac, sealed.exp);
    };
    try {
      if (!parsed.success) throw new PermanentError(`job data does not match the catalogue: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      const wrongPlace = opts.accepts(parsed.data);
      if (wrongPlace) throw new PermanentError(wrongPlace);
      const handler = opts.registry[parsed.data.runbook] as RunbookHandler<RunbookName> | undefined;
      // Never a silent success: a job whose runbook is not built into this worker fails visibly.
      if (!handler) throw new PermanentError(`not implemented: runbook ${parsed.data.runbook} is not available in ${opts.ranOn}`);
      const jobId = job.id ?? parsed.data.key;
      const begun = await controls?.begin({ jobId, queue: opts.queue, runbook, createdAt: job.timestamp, configuredMode: opts.modeOf(parsed.data.runbook), source: parsed.data.evidence[0]?.source });
      modeWhy = begun?.modeWhy;
      if (begun?.park) return await park(job, token, begun.park);
      // Only a job that ran before can be listed as parked (a first run's progress is 0): one
      // command less per job (bench:fleet counts them).
      if (typeof job.progress === 'object' && job.progress !== null) await controls?.unpark(jobId);
      const ctx: RunbookContext = {
        jobId,
        ...(parsed.data.retry ? { journalKey: parsed.data.retry.of } : {}),
        attempt: job.attemptsMade + 1,
        mode: begun?.mode ?? opts.modeOf(parsed.data.runbook),
        ranOn: opts.ranOn,
        log: opts.log.child({ jobId: job.id, runbook: parsed.data.runbook }),
        signal: shutdown.signal,
        ...(begun ? { gate: begun.gate } : {}),
        ...(controls ? { audit: (action: string, target: string, why: string) => controls.audit(action, target, why).catch((err: Error) => opts.log.warn({ err: err.message }, 'could not write the audit trail')) } : {}),
      };
      attemptLine += ` in ${ctx.mode} mode${modeWhy ? ` (${modeWhy})` : ''}`;
      event('started', `attempt ${ctx.attempt} on ${opts.ranOn}`, ctx.mode);
      const handled = await handler(parsed.data as never, ctx);
      const result = modeWhy ? { ...handled, modeWhy } : handled;
      done();
      await finish(result.outcome, `${result.outcome}: ${result.summary}`);
      const evidence = destructiveEvidenceLine(result.steps);
      event('succeeded', `${result.outcome}: ${result.summary}${evidence ? `; ${evidence}` : ''}`, result.mode);
      return result;
    } catch (err) {
      if (err instanceof DelayedError) throw err;
      if (err instanceof ParkedError) {
        return await park(job, token, err.parking, err.plan, modeWhy ? { ...err.result, modeWhy } : err.result);
      }
      const e = err instanceof Error ? err : new Error(String(err));
      const found = (err as { result?: unknown } | null)?.result;
      const partial = found && typeof found === 'object' && modeWhy ? { ...found, modeWhy } : found;
      if (partial !== undefined) {
        // A refusal or a failed step is an answer worth reading: keep its result (facts, plan,
        // reasons, the commands run so far) on the job for GET /v1/jobs/:id.
        await job.updateProgress({ result: partial } as object).catch(() => {});
      }
      const ending = !shouldRetry(err) || lastAttempt;
      if (ending) done();
      if (ending) await finish(err instanceof RefusedError ? 'refused' : e.message.startsWith('not implemented') ? 'not-implemented' : 'failed', `${e.name}: ${e.message}`);
      else await job.log(`${attemptLine}: ${e.name}: ${e.message}`).catch(() => {});
      if (err instanceof RefusedError) event('refused', e.message);
      else if (ending) event('failed', e.message);
      opts.log.warn({ jobId: job.id, runbook, err: e.message, retry: !ending }, 'job attempt failed');
      throw forBullmq(err);
    }
  };

  /**
   * The job's statistics and its log line, in one pipeline on a single Redis; on a Cluster the
   * job's log (its queue's slot) and the statistics hash are on different slots: sent at once.
   * The log is BullMQ's list of the job (`<job key>:logs`), written while this worker holds the
   * job's lock, so the job is there (what BullMQ's addLog script checks first).
   */
  const finishedAndLogged = async (job: Job, runbook: string, outcome: string, durationS: number, line: string): Promise<void> => {
    if (connection instanceof Cluster) {
      await Promise.all([job.log(line), recordFinished(connection, stats, runbook, outcome, durationS)]);
      return;
    }
    const p = connection.pipeline().rpush(worker.toKey(`${job.id ?? ''}:logs`), line);
    queueFinished(p, stats, runbook, outcome, durationS);
    await execAll(p);
  };

  /**
   * A mode, pause or approval without the API's valid seal is ignored (the newest record accepted
   * before stands, sealed-records.ts) and reported:
   * logged, counted, and in the audit trail, at most once per record and reason every 10 minutes.
   */
  function controlTrust(t: WorkTrust): ControlTrust {
    const told = new Map<string, number>();
    return {
      ring: t.controlRing ?? t.ring,
      allowUnsigned: t.allowUnsigned,
      ...(t.now ? { now: t.now } : {}),
      ...(t.controls ? { memory: t.controls } : {}),
      ...(t.auditSealer ? { audit: { sealer: t.auditSealer } } : {}),
      onUntrusted: (u) => {
        const key = `${u.kind}/${u.field}/${u.reason}`;
        const at = Date.now();
        if ((told.get(key) ?? 0) > at - 600_000) return;
        told.set(key, at);
        opts.log.error({ kind: u.kind, field: u.field.slice(0, 200), reason: u.reason, detail: u.detail }, 'untrusted control record ignored');
        metrics.untrusted.inc({ kind: u.kind, reason: u.reason });
        void recordUntrusted(connection, stats, u.kind, u.reason).catch(() => {});
        void controls?.audit('control-refused', `${u.kind}/${u.field.slice(0, 200)}`, `${u.reason}: ${u.detail}`).catch(() => {});
      },
    };
  }

  const checkTrust = (job: Job, parsedJob: RemediationJob | undefined): TrustCheck => {
    const t = opts.trust;
    if (!t) return {};
    const v = verifyJobSeal(t.ring, opts.queue, job.id ?? '', job.data, (t.now ?? Date.now)());
    if (!v.ok && v.reason === 'unknown-key') t.onUnknownKey?.();
    if (!v.ok) return v.reason === 'unsigned' && t.allowUnsigned ? {} : { refused: { reason: v.reason, detail: v.detail } };
    const notAllowed = parsedJob ? issuerMayNot(v.seal.iss, parsedJob) : undefined;
    if (notAllowed) return { refused: { reason: 'wrong-issuer', detail: `sealed by ${v.seal.iss}.${v.seal.kid}: ${notAllowed}` } };
    if (t.seen.finished(v.seal.mac)) return { refused: { reason: 'replayed', detail: `this sealed job (issued by ${v.seal.iss} at ${new Date(v.seal.iat).toISOString()}) already finished here` } };
    return { seal: v.seal };
  };

  /**
   * Untrusted work fails at once without running anything: logged on the job, counted
   * (volume_medic_untrusted_refused_total), in the audit trail, and an Event on the agent's node.
   */
  const refuseUntrusted = async (job: Job, claimed: string, r: { reason: Untrusted; detail: string }): Promise<never> => {
    const why = `untrusted work refused (${r.reason}): ${r.detail}; nothing was run`;
    opts.log.error({ jobId: job.id, queue: opts.queue, claimedRunbook: claimed, reason: r.reason, detail: r.detail }, 'untrusted work refused');
    metrics.untrusted.inc({ kind: 'job', reason: r.reason });
    metrics.finished.inc({ runbook: claimed, outcome: 'untrusted' });
    await Promise.all([
      job.log(why).catch(() => {}),
      recordUntrusted(connection, stats, 'job', r.reason).catch(() => {}),
      recordFinished(connection, stats, claimed, 'untrusted', 0).catch(() => {}),
      controls?.audit('work-refused', `job/${String(job.id).slice(0, 200)}`, `${r.reason}: ${r.detail}; queue ${opts.queue}; claimed runbook ${claimed}`).catch(() => {}),
    ]);
    const node = opts.controls?.node;
    if (node && opts.events) void opts.events.recordJobEvent({ jobId: String(job.id ?? '').slice(0, 200), runbook: 'untrusted', outcome: 'refused', regarding: { kind: 'Node', name: node }, message: why.slice(0, 900) });
    throw new UnrecoverableError(why);
  };

  /**
   * Parks the job: its plan and the result so far go into its progress, it is listed as parked,
   * and it moves to `delayed` until the next recheck (or until the API promotes it). Throwing
   * DelayedError tells BullMQ the job was moved, not failed: no attempt is used.
   */
  const park = async (job: Job, token: string | undefined, parking: Parking, plan?: PlanView, partial?: unknown): Promise<never> => {
    const jobId = job.id ?? '';
    const runbook = String((job.data as { runbook?: unknown }).runbook ?? job.name);
    // Without controls only evidence can park a job (nothing else asks); it is then not listed.
    const since = controls ? await controls.park({ jobId, queue: opts.queue, runbook, reason: parking.reason, why: parking.why }) : new Date().toISOString();
    const at = parking.until ? Math.max(parking.until.getTime(), Date.now() + 1000) : Date.now() + (controls?.recheckMs ?? DEFAULT_RECHECK_MS);
    const recheckAt = new Date(at).toISOString();
    const { until: _until, ...shown } = parking;
    await job.updateProgress({ parked: { ...shown, since, recheckAt, ...(plan ? { plan } : {}) }, ...(partial !== undefined ? { result: partial } : {}) });
    await job.log(`waiting (${parking.reason}) until ${recheckAt}: ${parking.why}`);
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  };

  const keep = opts.keepFinished ?? keepFinished(placementOfQueue(opts.queue));
  const worker = new Worker(opts.queue, processor, {
    connection,
    prefix: opts.prefix,
    // No full INFO per connection at start (BullMQ's version check): after a power loss 10,000
    // agents connecting at once each sent two, costlier the more clients Redis already has.
    // README states the Redis versions we run on.
    skipVersionCheck: true,
    concurrency: 1,
    // An idle worker blocks on its queue's marker this long per round trip (BullMQ's default: 5 s).
    // A new job wakes it at once whatever this is, so it costs no latency; at fleet scale it is
    // most of Redis's idle load (bench/fleet.ts: a wake-up is a BZPOPMIN plus a script call, 6x
    // fewer at 30 s). BullMQ ends the wait after this + 1 s on a connection that died silently.
    drainDelay: IDLE_BLOCK_SECONDS,
    lockDuration: opts.lockDurationMs,
    stalledInterval: opts.lockDurationMs,
    removeOnComplete: keep,
    removeOnFail: keep,
    // A job that stalled (its worker died) is taken again; after this many stalls it fails, so
    // a runbook that kills its own agent cannot loop forever.
    maxStalledCount: 2,
    // A fetch that failed on a dropped connection is tried again after this (BullMQ's default:
    // 15 s). Commands wait in the offline queue while the connection is down, so this is one retry
    // per drop, not a loop against a dead Redis.
    runRetryDelay: FETCH_RETRY_MS,
    autorun: true,
  });
  worker.on('error', (err) => opts.log.error({ err: err.message }, 'worker error'));
  const stopRearming = rearmAfterReconnect(connection, worker, worker.toKey('marker'), opts.log);
  worker.on('stalled', (id) => opts.log.warn({ jobId: id }, 'job stalled (its worker stopped); it will be taken again'));

  let closing: Promise<void> | undefined;
  const stopBeat = startPresenceBeat({
    redis: connection, prefix: opts.prefix, queue: opts.queue, intervalMs: opts.lockDurationMs,
    running: () => closing === undefined && worker.isRunning(), log: opts.log,
  });
  return {
    worker,
    connection,
    connections,
    metrics,
    running: () => closing === undefined && worker.isRunning(),
    close: () => (closing ??= (async () => {
      shutdown.abort();
      stopBeat();
      stopRearming();
      // Waits for the running job to finish its current step; BullMQ keeps its lock meanwhile.
      await worker.close();
      await connections.close();
    })()),
  };
}

export { UnrecoverableError };
