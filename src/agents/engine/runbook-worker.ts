import type { RedisConnection } from '../../adapters/redis/redis.ts';
import { RemediationJob, type RunbookName } from '../../core/catalogue/jobs.ts';
import { queueFinished, queueStatsKey, recordFinished, recordUntrusted } from '../../adapters/stats/job-stats.ts';
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
import type { RunbookContext, RunbookHandler, RunbookRegistry } from './registry.ts';
import { eventSubject, type JobEventSink } from './job-events.ts';
import { FinalError, PermanentError, RefusedError, shouldRetry } from '../../core/errors.ts';
import { JobParked, type JobConsumer, type TakenJob } from '../../core/jobs/job-store.ts';
import { consumeJobs } from '../../adapters/jobstore/consumer.ts';
import { destructiveEvidenceLine } from './evidence.ts';
import { ParkedError, type Parking, type PlanView } from './gate.ts';
import { keepFinished } from '../../core/catalogue/policy.ts';
import { placementOfQueue } from '../../core/catalogue/queues.ts';
import { createJobControls, type JobControls, type JobControlsOptions } from './job-controls.ts';
import { startPresenceBeat } from './presence-beat.ts';

// The consumer of one queue that runs registered runbooks: shared by the node agent (its node's
// queue) and the cluster worker (the cluster queue). It parses every job again (Redis is a
// boundary), runs one job at a time, and says with its errors whether to retry (core/errors.ts).

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

interface WorkTrust {
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

/** How long a parked job waits before it looks again when nothing says otherwise (no controls). */
const DEFAULT_RECHECK_MS = 30_000;

export interface RunbookWorker {
  /** The queue's consumer (the job store's). */
  consumer: JobConsumer;
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
    target: opts.redis,
    process: opts.process ?? opts.ranOn,
    log: opts.log.child({ component: 'redis' }),
    ...(opts.onRedisAuthRefused ? { onAuthRefused: opts.onRedisAuthRefused } : {}),
  });
  const connection = connections.open('worker', 'worker');
  const metrics = createWorkerMetrics();
  // Its statistics under its own queue (a node's Redis user may write no other's).
  const stats = queueStatsKey(opts.prefix, opts.queue);
  const shutdown = new AbortController();
  const controls: JobControls | undefined = opts.controls
    ? createJobControls({
        ...opts.controls,
        redis: connection,
        prefix: opts.prefix,
        queue: opts.queue,
        log: opts.log,
        ...(opts.trust ? { trust: controlTrust(opts.trust) } : {}),
      })
    : undefined;

  const processor = async (job: TakenJob): Promise<RunbookResult> => {
    const started = Date.now();
    let modeWhy: string | undefined;
    const parsed = RemediationJob.safeParse(job.data);
    const runbook = parsed.success ? parsed.data.runbook : String(job.name);
    const lastAttempt = job.attemptsMade + 1 >= job.attempts;
    // Fire and forget: the recorder never throws, and the API server's latency is not the job's.
    const subject = parsed.success && opts.events ? eventSubject(parsed.data) : undefined;
    const event = (outcome: 'started' | 'refused' | 'succeeded' | 'failed', message: string, mode?: Mode): void => {
      if (!subject || !opts.events) return;
      void opts.events.recordJobEvent({ jobId: job.id, runbook, outcome, regarding: subject, message, ...(mode ? { mode } : {}) });
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
      const jobId = job.id || parsed.data.key;
      const begun = await controls?.begin({
        jobId,
        queue: opts.queue,
        runbook,
        createdAt: job.timestamp,
        configuredMode: opts.modeOf(parsed.data.runbook),
        source: parsed.data.evidence[0]?.source,
      });
      modeWhy = begun?.modeWhy;
      if (begun?.park) return await park(job, begun.park);
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
        ...(controls
          ? {
              audit: (action: string, target: string, why: string) =>
                controls.audit(action, target, why).catch((err: Error) => opts.log.warn({ err: err.message }, 'could not write the audit trail')),
            }
          : {}),
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
      if (err instanceof JobParked) throw err;
      if (err instanceof ParkedError) {
        return await park(job, err.parking, err.plan, modeWhy ? { ...err.result, modeWhy } : err.result);
      }
      const e = err instanceof Error ? err : new Error(String(err));
      const found = (err as { result?: unknown } | null)?.result;
      const partial = found && typeof found === 'object' && modeWhy ? { ...found, modeWhy } : found;
      if (partial !== undefined) {
        // A refusal or a failed step is an answer worth reading: keep its result (facts, plan,
        // reasons, the commands run so far) on the job for GET /v1/jobs/:id.
        await job.setProgress({ result: partial } as object).catch(() => {});
      }
      const ending = !shouldRetry(err) || lastAttempt;
      if (ending) done();
      if (ending)
        await finish(
          err instanceof RefusedError ? 'refused' : e.message.startsWith('not implemented') ? 'not-implemented' : 'failed',
          `${e.name}: ${e.message}`,
        );
      else await job.log(`${attemptLine}: ${e.name}: ${e.message}`).catch(() => {});
      if (err instanceof RefusedError) event('refused', e.message);
      else if (ending) event('failed', e.message);
      opts.log.warn({ jobId: job.id, runbook, err: e.message, retry: !ending }, 'job attempt failed');
      throw err;
    }
  };

  /** The job's statistics and its log line: one round trip where the store can. */
  const finishedAndLogged = (job: TakenJob, runbook: string, outcome: string, durationS: number, line: string): Promise<void> =>
    job.log(line, (batch) => queueFinished(batch, stats, runbook, outcome, durationS));

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

  const checkTrust = (job: TakenJob, parsedJob: RemediationJob | undefined): TrustCheck => {
    const t = opts.trust;
    if (!t) return {};
    const v = verifyJobSeal(t.ring, opts.queue, job.id, job.data, (t.now ?? Date.now)());
    if (!v.ok && v.reason === 'unknown-key') t.onUnknownKey?.();
    if (!v.ok) return v.reason === 'unsigned' && t.allowUnsigned ? {} : { refused: { reason: v.reason, detail: v.detail } };
    const notAllowed = parsedJob ? issuerMayNot(v.seal.iss, parsedJob) : undefined;
    if (notAllowed) return { refused: { reason: 'wrong-issuer', detail: `sealed by ${v.seal.iss}.${v.seal.kid}: ${notAllowed}` } };
    if (t.seen.finished(v.seal.mac))
      return {
        refused: {
          reason: 'replayed',
          detail: `this sealed job (issued by ${v.seal.iss} at ${new Date(v.seal.iat).toISOString()}) already finished here`,
        },
      };
    return { seal: v.seal };
  };

  /**
   * Untrusted work fails at once without running anything: logged on the job, counted
   * (volume_medic_untrusted_refused_total), in the audit trail, and an Event on the agent's node.
   */
  const refuseUntrusted = async (job: TakenJob, claimed: string, r: { reason: Untrusted; detail: string }): Promise<never> => {
    const why = `untrusted work refused (${r.reason}): ${r.detail}; nothing was run`;
    opts.log.error({ jobId: job.id, queue: opts.queue, claimedRunbook: claimed, reason: r.reason, detail: r.detail }, 'untrusted work refused');
    metrics.untrusted.inc({ kind: 'job', reason: r.reason });
    metrics.finished.inc({ runbook: claimed, outcome: 'untrusted' });
    await Promise.all([
      job.log(why).catch(() => {}),
      recordUntrusted(connection, stats, 'job', r.reason).catch(() => {}),
      recordFinished(connection, stats, claimed, 'untrusted', 0).catch(() => {}),
      controls
        ?.audit('work-refused', `job/${String(job.id).slice(0, 200)}`, `${r.reason}: ${r.detail}; queue ${opts.queue}; claimed runbook ${claimed}`)
        .catch(() => {}),
    ]);
    const node = opts.controls?.node;
    if (node && opts.events)
      void opts.events.recordJobEvent({
        jobId: String(job.id ?? '').slice(0, 200),
        runbook: 'untrusted',
        outcome: 'refused',
        regarding: { kind: 'Node', name: node },
        message: why.slice(0, 900),
      });
    throw new FinalError(why);
  };

  /**
   * Parks the job: its plan and the result so far go into its progress, it is listed as parked,
   * and it waits (delayed) until the next recheck (or until the API promotes it); no attempt is
   * used.
   */
  const park = async (job: TakenJob, parking: Parking, plan?: PlanView, partial?: unknown): Promise<never> => {
    const jobId = job.id;
    const runbook = String((job.data as { runbook?: unknown }).runbook ?? job.name);
    // Without controls only evidence can park a job (nothing else asks); it is then not listed.
    const since = controls ? await controls.park({ jobId, queue: opts.queue, runbook, reason: parking.reason, why: parking.why }) : new Date().toISOString();
    const at = parking.until ? Math.max(parking.until.getTime(), Date.now() + 1000) : Date.now() + (controls?.recheckMs ?? DEFAULT_RECHECK_MS);
    const recheckAt = new Date(at).toISOString();
    const { until: _until, ...shown } = parking;
    await job.setProgress({
      parked: { ...shown, since, recheckAt, ...(plan ? { plan } : {}) },
      ...(partial !== undefined ? { result: partial } : {}),
    });
    await job.log(`waiting (${parking.reason}) until ${recheckAt}: ${parking.why}`);
    return job.park(at);
  };

  const keep = opts.keepFinished ?? keepFinished(placementOfQueue(opts.queue));
  const consumer = consumeJobs(
    { queue: opts.queue, prefix: opts.prefix, connection, lockDurationMs: opts.lockDurationMs, keepFinished: keep, log: opts.log },
    processor,
  );

  let closing: Promise<void> | undefined;
  const stopBeat = startPresenceBeat({
    redis: connection,
    prefix: opts.prefix,
    queue: opts.queue,
    intervalMs: opts.lockDurationMs,
    running: () => closing === undefined && consumer.running(),
    log: opts.log,
  });
  return {
    consumer,
    connection,
    connections,
    metrics,
    running: () => closing === undefined && consumer.running(),
    close: () =>
      (closing ??= (async () => {
        shutdown.abort();
        stopBeat();
        // Waits for the running job to finish its current step; the store keeps its lock meanwhile.
        await consumer.close();
        await connections.close();
      })()),
  };
}
