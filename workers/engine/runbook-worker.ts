import type { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/adapters/observability/worker-metrics.ts';
import { queueStatsKey } from '../../src/adapters/stats/job-stats.ts';
import { RemediationJob, type RunbookName } from '../../src/core/catalogue/jobs.ts';
import { keepFinished, keepFor } from '../../src/core/catalogue/policy.ts';
import { placementOfQueue } from '../../src/core/catalogue/queues.ts';
import type { Mode, RunbookResult } from '../../src/core/catalogue/result.ts';
import { modeOf } from '../../src/core/config/load.ts';
import type { AgentConfig } from '../../src/core/config/schema.ts';
import { JobParked, type JobConsumer, type TakenJob } from '../../src/core/jobs/job-store.ts';
import type { Trust } from '../../src/core/trust/from-config.ts';
import { join } from 'node:path';
import { controlMemory, controlMemoryFile } from './control-memory.ts';
import type { EnrolledKeys } from './enrolled-keys.ts';
import { ParkedError } from './gate.ts';
import { controlsFromConfig, createJobControls, type JobControlsOptions } from './job-controls.ts';
import type { JobEventSink } from './job-event-sink.ts';
import { startPresenceBeat } from './presence-beat.ts';
import { announceRuns } from './announce-runs.ts';
import type { RunbookContext, RunbookRegistry } from './registry.ts';
import { Attempt } from './stages/attempt.ts';
import { type BeginRules, begin } from './stages/begin.ts';
import type { StageDeps, WorkTrust } from './stages/deps.ts';
import { failed } from './stages/failed.ts';
import { park } from './stages/park.ts';
import { controlTrust, refuseUntrusted, verifyTrust } from './stages/verify-trust.ts';
import { seenWork } from './seen-work.ts';
import { coordinationFromConfig } from './coordinate.ts';
import type { KubeRead } from '../../src/adapters/kube/kube-coordination.ts';

// The consumer of one queue that runs registered runbooks: shared by the node agent (its node's
// queue) and the cluster worker (the cluster queue). It parses every job again (Redis is a
// boundary), runs one job at a time, and says with its errors whether to retry (core/errors.ts).
// createAgentWorker builds it as an agent's configuration says; createRunbookWorker takes every
// option as it is (the tests of the engine and the runbooks).

export interface RunbookWorkerOptions {
  queue: string;
  /** The job store, holding its connections: the worker consumes there, and closes it when it closes. */
  store: AgentStore;
  ranOn: string;
  registry: RunbookRegistry;
  modeOf: (runbook: RunbookName) => Mode;
  /** Rejects jobs that are not for this worker (a node agent only runs its node's jobs). */
  accepts: (job: RemediationJob) => string | undefined;
  lockDurationMs: number;
  /**
   * How long finished jobs of this queue are kept (its deduplication window, catalogue/policy.ts
   * `keepFinished`): BullMQ's Worker removeOnComplete/removeOnFail, for the jobs that do not say
   * (ours do not; a job stored by an older receiver still carries its own).
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
   * Other tools acting on a job's node (kured, a drain, medik8s), asked before each destructive
   * step; without it no step waits for them (COORDINATION=off, tests of the runbooks alone).
   */
  coordination?: RunbookContext['coordination'];
  /**
   * Sealed work: every job's seal is verified (issuer's key, bound to this queue and job id, not
   * expired, an issuer allowed to ask for this runbook, not a replay of finished work) before
   * anything else runs. Without it (tests of the runbooks alone) jobs are taken as they are.
   */
  trust?: WorkTrust;
}

export interface RunbookWorker {
  /** The queue's consumer (the job store's). */
  consumer: JobConsumer;
  /** The store it consumes from: its connections (for /readyz), and where the agent's own checks enqueue (no third connection). */
  store: AgentStore;
  /** This worker's own counts of finished and refused work, for its process's /metrics. */
  metrics: WorkerMetrics;
  /** Taking jobs: started and not closing (the probe server's /readyz). */
  running(): boolean;
  close(): Promise<void>;
}

// long because: a worker's composition root: the stages' shared record, the stage order (the processor), the consumer and the shutdown
export function createRunbookWorker(opts: RunbookWorkerOptions): RunbookWorker {
  const { store } = opts;
  const { connection, prefix } = store;
  const metrics = createWorkerMetrics();
  const shutdown = new AbortController();
  const keep = opts.keepFinished ?? keepFinished(placementOfQueue(opts.queue));
  const d: StageDeps = {
    queue: opts.queue,
    keptFinishedMs: keep.age * 1000,
    ranOn: opts.ranOn,
    log: opts.log,
    connection,
    // Its statistics under its own queue (a node's Redis user may write no other's).
    stats: queueStatsKey(prefix, opts.queue),
    metrics,
    ...(opts.events ? { events: opts.events } : {}),
    ...(opts.trust ? { trust: opts.trust } : {}),
    ...(opts.controls?.node ? { node: opts.controls.node } : {}),
    ...(opts.coordination ? { coordination: opts.coordination } : {}),
  };
  if (opts.controls) {
    d.controls = createJobControls({
      ...opts.controls,
      redis: connection,
      prefix,
      queue: opts.queue,
      log: opts.log,
      ...(store.oneClusterSlot ? { oneSlot: true } : {}),
      ...(opts.trust ? { trust: controlTrust(opts.trust, d) } : {}),
    });
  }
  const rules: BeginRules = { registry: opts.registry, modeOf: opts.modeOf, accepts: opts.accepts, signal: shutdown.signal };

  // verify trust -> begin (controls, park) -> run -> record: each stage in ./stages.
  const processor = async (job: TakenJob): Promise<RunbookResult> => {
    const parsed = RemediationJob.safeParse(job.data);
    const attempt = new Attempt(d, job, parsed.success ? parsed.data : undefined);
    const trusted = verifyTrust(d, job, parsed.success ? parsed.data : undefined);
    if (trusted.refused) return refuseUntrusted(d, job, parsed.success ? parsed.data.runbook : 'unknown', trusted.refused);
    const done = (): void => {
      if (trusted.seal) opts.trust?.seen.markFinished(trusted.seal.mac, trusted.seal.exp);
    };
    let modeWhy: string | undefined;
    // The node whose volume_medic_node_remediation_in_progress this job holds at 1 (from its first destructive step to its end).
    let acting: string | undefined;
    try {
      const begun = await begin(d, rules, job, parsed);
      modeWhy = begun.modeWhy;
      if (begun.kind === 'park') {
        attempt.parked(begun.parking, undefined);
        return await park(d, job, begun.parking);
      }
      begun.ctx.acting = (node) => {
        if (!node || acting !== undefined) return;
        acting = node;
        metrics.inProgress.start(node);
      };
      attempt.runs(begun.ctx.mode, modeWhy, begun.ctx.attempt);
      const handled = await begun.handler(begun.job as never, begun.ctx);
      const result = modeWhy ? { ...handled, modeWhy } : handled;
      done();
      await attempt.succeeded(result);
      return result;
    } catch (err) {
      if (err instanceof JobParked) throw err;
      if (err instanceof ParkedError) {
        attempt.parked(err.parking, err.plan);
        return await park(d, job, err.parking, err.plan, modeWhy ? { ...err.result, modeWhy } : err.result);
      }
      return await failed(d, job, attempt, err, modeWhy, done);
    } finally {
      if (acting !== undefined) metrics.inProgress.end(acting);
    }
  };

  const consumer = store.consume({ queue: opts.queue, lockDurationMs: opts.lockDurationMs, keepFinished: keep }, processor);

  let closing: Promise<void> | undefined;
  const stopBeat = startPresenceBeat({
    redis: connection,
    prefix,
    queue: opts.queue,
    intervalMs: opts.lockDurationMs,
    running: () => closing === undefined && consumer.running(),
    log: opts.log,
  });
  const stopAnnouncing = announceRuns({
    redis: connection,
    prefix,
    queue: opts.queue,
    runbooks: Object.keys(opts.registry) as RunbookName[],
    by: opts.ranOn,
    retryMs: opts.lockDurationMs,
    log: opts.log,
  });
  return {
    consumer,
    store,
    metrics,
    running: () => closing === undefined && consumer.running(),
    close: () =>
      (closing ??= (async () => {
        shutdown.abort();
        stopBeat();
        stopAnnouncing();
        // Waits for the running job to finish its current step; the store keeps its lock meanwhile.
        await consumer.close();
        await store.close();
      })()),
  };
}

// An agent's runbook worker as configuration says: the modes, the lock, how long finished jobs
// stay, the operator controls, and the trust its work is verified with (keys from SIGNING_KEYS_DIR
// or enrolment, replays remembered in STATE_DIR). What differs between the node agent and the
// cluster worker (queue, runbooks, what a job must be to be theirs) is theirs to say.

export interface AgentWorkerOptions extends Pick<RunbookWorkerOptions, 'queue' | 'ranOn' | 'registry' | 'accepts' | 'events'> {
  /** GETs of the API server (cluster access only): what coordination with kured, drains and medik8s reads (COORDINATION). */
  kubeRead?: KubeRead | undefined;
  as: 'node-agent' | 'cluster-worker';
  config: AgentConfig;
  /** The worker closes it when it closes. */
  store: AgentStore;
  trust: Trust;
  enrolled?: EnrolledKeys | undefined;
  /** Its file of finished work's seals in STATE_DIR (a replay is refused across restarts). */
  seenFile: string;
  /** More of the controls than configuration's (a node agent's node, its label, the receiver's breakers). */
  controls?: Omit<NonNullable<RunbookWorkerOptions['controls']>, keyof ReturnType<typeof controlsFromConfig>>;
  log: Logger;
}

export function createAgentWorker(o: AgentWorkerOptions): RunbookWorker {
  const { config, trust, enrolled, log } = o;
  if (trust.allowUnsigned) log.warn(`ALLOW_UNSIGNED_WORK=true: the ${o.as} runs work without a seal; anyone who can write to Redis can make it act`);
  const coordination = coordinationFromConfig(config, o.kubeRead, log);
  return createRunbookWorker({
    queue: o.queue,
    store: o.store,
    ranOn: o.ranOn,
    registry: o.registry,
    modeOf: (runbook) => modeOf(config, runbook),
    accepts: o.accepts,
    lockDurationMs: config.lockDurationMs,
    keepFinished: keepFor(config.dedupWindowMs[placementOfQueue(o.queue)]),
    log,
    controls: { ...controlsFromConfig(config), ...o.controls },
    ...(o.events ? { events: o.events } : {}),
    ...(coordination ? { coordination } : {}),
    trust: {
      ring: trust.ring,
      controlRing: trust.controls.ring,
      allowUnsigned: trust.allowUnsigned,
      seen: seenWork(join(config.stateDir, o.seenFile), log),
      controls: controlMemory(join(config.stateDir, controlMemoryFile(config.queuePrefix, o.as)), log),
      ...(enrolled ? { onUnknownKey: () => enrolled.renewSoon() } : {}),
      ...(trust.sealer ? { auditSealer: trust.sealer } : {}),
    },
  });
}
