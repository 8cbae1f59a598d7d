import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import type { Config } from '../../src/core/config/schema.ts';
import type { Mode } from '../../src/core/catalogue/result.ts';
import { ApprovalStore } from '../../src/adapters/controls/approval-store.ts';
import { Cluster } from 'ioredis';
import { Breakers, breakerCapsFromConfig, stormTrip, type BreakerCaps, type BreakerPort } from '../../src/adapters/controls/breakers.ts';
import { ControlsStore, type Overrides, type StartView } from '../../src/adapters/controls/controls-store.ts';
import { execAll } from '../../src/adapters/redis/exec-all.ts';
import { effectiveMode } from '../../src/core/controls/effective-mode.ts';
import type { ApprovalRecord, ParkedJob, TripRecord } from '../../src/core/controls/records.ts';
import type { ControlTrust } from '../../src/core/controls/sealed-records.ts';
import type { RelayedControls } from '../../src/core/controls/control-relay.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { approvalReason, gatedSteps, type ApprovalPolicy } from './approval-policy.ts';
import { RefusedError } from '../../src/core/errors.ts';
import { GO, type GateDecision, type Parking, type PlanView, type StepGate } from './gate.ts';
import type { PlannedStep } from './runbook.ts';

// The worker's side of the operator controls, read from Redis at each job's start and before
// each step, so a change through the API takes effect on the next job (a mode to enforce) or the
// next step (pause, approval, breakers, a mode back to dry-run) without a restart. Order before
// a step: pause -> approval -> breakers, so a job waiting for a human does not use up the
// blast-radius budget.
//
// Why a gate in the worker and not BullMQ's queue.pause(): the pause must cover queues that do
// not exist yet (a node joining during a cluster-wide pause), a node pause and a cluster pause
// must combine without one's resume undoing the other, and a pause must also stop a job that is
// already running before its next step. A parked job is moved to `delayed` with its plan in its
// progress (nothing is lost; BullMQ counts no attempt) and looks again every recheck interval,
// or at once when the API resumes, approves or resets.

export interface JobControlsOptions {
  redis: RedisConnection;
  prefix: string;
  approval: ApprovalPolicy;
  approvalTtlMs: number;
  caps: BreakerCaps;
  recheckMs: number;
  /**
   * The queue this worker consumes: what it writes about its jobs (approval requests, parked
   * records, audit entries) goes under that queue's keys (src/core/controls/redis-keys.ts queueControlKeys),
   * the only ones a node's own Redis user may write.
   */
  queue: string;
  /** The connection serves the queue's slot only (a Cluster, ConnectOptions.oneSlot): controls from the queue's copy only. */
  oneSlot?: boolean;
  /** The node this worker acts on (a node agent); undefined for the cluster worker. */
  node?: string;
  /** The node's `volume-medic.io/mode` label, read per job (undefined: no label or no lookup). */
  nodeModeLabel?: () => Promise<string | undefined>;
  log: Logger;
  now?: () => Date;
  /** Verifies the API's seals on modes, pauses and approvals; without it records are taken as they are (tests). */
  trust?: ControlTrust;
  /**
   * Where breaker slots are taken: the receiver, for an agent whose own Redis user may not write
   * the breakers' keys (workers/engine/receiver-breakers.ts). Default: the breakers in Redis.
   * One whose answers relay the receiver's newest control records (`onRelay`) teaches this
   * worker's reader of the controls (src/core/controls/control-relay.ts).
   */
  breakers?: BreakerPort & { onRelay?(listener: (relay: RelayedControls) => void): void };
}

interface JobStart {
  jobId: string;
  queue: string;
  runbook: string;
  /** BullMQ job timestamp. */
  createdAt: number;
  configuredMode: Mode;
  /** What sent the job's signal (its first evidence's source): the storm breaker names it. */
  source?: string;
  /** The receiver counted the node towards the storm breaker when it stored the job (sealed in it): nothing to count here. */
  stormCounted?: boolean;
}

interface Begun {
  mode: Mode;
  modeWhy: string;
  park?: Parking;
  gate: StepGate;
}

export interface JobControls {
  recheckMs: number;
  begin(job: JobStart): Promise<Begun>;
  park(p: Omit<ParkedJob, 'since' | 'node'>): Promise<string>;
  unpark(jobId: string): Promise<void>;
  /** An entry in the operator audit trail, by this worker (a destructive step run, a refusal), with its evidence. */
  audit(action: string, target: string, why: string): Promise<void>;
}

export function controlsFromConfig(
  config: Pick<
    Config,
    | 'approvalHighRisk'
    | 'approvalRunbooks'
    | 'approvalMaxDestructiveSteps'
    | 'approvalTtlSeconds'
    | 'controlsRecheckSeconds'
    | 'breakerNodeDestructivePerHour'
    | 'breakerClusterDestructivePerHour'
    | 'breakerStormNodes'
    | 'breakerStormWindowSeconds'
  >,
): Pick<JobControlsOptions, 'approval' | 'approvalTtlMs' | 'caps' | 'recheckMs'> {
  return {
    approval: {
      highRisk: config.approvalHighRisk,
      runbooks: config.approvalRunbooks,
      maxDestructiveSteps: config.approvalMaxDestructiveSteps,
    },
    approvalTtlMs: config.approvalTtlSeconds * 1000,
    caps: breakerCapsFromConfig(config),
    recheckMs: Math.round(config.controlsRecheckSeconds * 1000),
  };
}

/** What one worker's controls share. */
interface Controls {
  opts: JobControlsOptions;
  now: () => Date;
  store: ControlsStore;
  approvals: ApprovalStore;
  breakers: BreakerPort;
  /** This process's own breakers (no receiver to ask: the cluster worker, tests). */
  local: Breakers | undefined;
  node: string | undefined;
  /** How many relayed records were newer than what this worker knew (a step's gate compares it before and after its slot). */
  relayed: { learned: number };
}

/** The approval gate: a step that needs an operator's approval waits for it (asked once per plan, in the agent's own words). */
async function approvalGate(c: Controls, job: JobStart, step: PlannedStep, plan: PlanView): Promise<GateDecision> {
  const { opts, store, approvals, node, now } = c;
  if (!approvalReason(step, plan, job.runbook, opts.approval)) return GO;
  const stored = await approvals.get(job.queue, job.jobId);
  const rec = stored && stored.jobCreatedAt === job.createdAt ? stored : undefined;
  const t = now();
  // A decision covers this step only as the agent words it now: a request whose wording was
  // rewritten in Redis ("read-only re-scan") and then approved does not let the real step run;
  // the agent asks again, in its own words.
  const covers = rec?.steps.some((s) => s.id === step.id && s.description === step.description) ?? false;
  if (rec?.state === 'rejected')
    throw new RefusedError([`approval rejected by ${rec.decidedBy ?? '?'} at ${rec.decidedAt ?? '?'}${rec.why ? `: ${rec.why}` : ''}`]);
  if (rec?.state === 'expired') throw new RefusedError([`approval request expired at ${rec.expiresAt} without a decision`]);
  if (rec?.state === 'approved' && covers) {
    if (rec.validUntil && Date.parse(rec.validUntil) < t.getTime()) {
      await approvals.transition(job.queue, 'approved', { ...rec, state: 'expired' });
      throw new RefusedError([`the approval by ${rec.decidedBy ?? '?'} expired at ${rec.validUntil} before step ${step.id} ran`]);
    }
    return GO;
  }
  if (rec?.state === 'pending' && covers) {
    if (Date.parse(rec.expiresAt) < t.getTime()) {
      await approvals.transition(job.queue, 'pending', { ...rec, state: 'expired' });
      throw new RefusedError([`approval request expired at ${rec.expiresAt} without a decision`]);
    }
    return { go: false, park: { reason: 'approval', why: waitingWhy(rec) } };
  }
  // No request yet, or the plan changed since the last decision: ask for this plan.
  const request: ApprovalRecord = {
    jobId: job.jobId,
    queue: job.queue,
    runbook: job.runbook,
    ...(node ? { node } : {}),
    jobCreatedAt: job.createdAt,
    state: 'pending',
    summary: plan.summary,
    steps: gatedSteps(plan, job.runbook, opts.approval),
    requestedAt: t.toISOString(),
    expiresAt: new Date(t.getTime() + opts.approvalTtlMs).toISOString(),
  };
  await approvals.put(request);
  await store.audit('approval-requested', `job/${job.jobId}`, { by: node ?? 'cluster-worker', why: request.steps.map((s) => s.id).join(', ') }, opts.queue);
  opts.log.warn({ jobId: job.jobId, steps: request.steps.map((s) => s.id) }, 'job waits for approval');
  return { go: false, park: { reason: 'approval', why: waitingWhy(request) } };
}

/** The breaker gate: a destructive step takes a slot of its node's and the cluster's breakers, or waits. */
async function breakerGate(c: Controls, job: JobStart, step: PlannedStep): Promise<GateDecision> {
  const { opts, breakers, node } = c;
  if (!step.destructive) return GO;
  let r: Awaited<ReturnType<BreakerPort['reserveDestructive']>>;
  try {
    r = await breakers.reserveDestructive(opts.caps, { ...(node ? { node } : {}), jobId: job.jobId, stepId: step.id });
  } catch (err) {
    // Unknown is not a slot: the step waits and asks again.
    return {
      go: false,
      park: { reason: 'breaker', why: `no breaker slot: ${(err as Error).message}; asking again at the next recheck` },
    };
  }
  if (!r.ok)
    return {
      go: false,
      park: {
        reason: 'breaker',
        why: `breaker ${r.blockedBy.breaker} is tripped (${r.blockedBy.why}); reset it with POST /v1/breakers/reset`,
      },
    };
  for (const t of r.tripped) opts.log.error({ breaker: t.breaker, why: t.why }, 'blast-radius breaker tripped: destructive steps stop until it is reset');
  return GO;
}

/**
 * The receiver's count of the node when it stored the job stands for this start while the store
 * is recent: within half the storm window the node is still in it. A start long after its store
 * (an agent that was down, a retry after its backoff) is counted anew, as a start always was:
 * a fleet of agents coming back to old jobs at once is a storm too.
 */
const countedRecently = (c: Controls, job: JobStart): boolean =>
  job.stormCounted === true && c.now().getTime() - job.createdAt <= c.opts.caps.stormWindowMs / 2;

/**
 * A job's start: its modes and pauses read, and (a node's job the receiver did not count when
 * it stored it, or long ago) the node counted towards the storm breaker, in one round trip on a single Redis
 * (bench/job-lifecycle.ts: two fewer per job); on a Cluster, where the keys sit in different
 * slots, sent at once. The node counts even when its job then waits for a pause: it was picked
 * up (a storm is a storm whether or not an operator paused it; a trip only ever holds
 * destructive steps back). A counted job's start asks the receiver nothing: the relay of its
 * newest control records comes with each destructive step's slot (stepGate), where it matters.
 */
async function startReads(c: Controls, job: JobStart): Promise<{ view: StartView; storm?: TripRecord | undefined; uncounted?: string }> {
  const { opts, store, breakers, local, node } = c;
  const { runbook, source } = job;
  if (!node) return { view: await store.startView(runbook) };
  if (countedRecently(c, job)) return { view: await store.startView(runbook, node) };
  if (!local) {
    // The receiver counts the start: a start it could not count waits (the storm breaker must see it).
    // Its answer relays the newest control records it knows (taken by the time it resolves): what
    // was read from Redis meanwhile is opened only then, so an older record there is a replay.
    const [replies, storm] = await Promise.all([
      store.startReplies(runbook, node),
      breakers.recordNodeActivity(opts.caps, node, source).then(
        (t) => ({ t }),
        (err: Error) => ({ err }),
      ),
    ]);
    const view = store.readStartView(replies, runbook, node);
    return 'err' in storm ? { view, uncounted: storm.err.message } : { view, storm: storm.t };
  }
  if (opts.redis instanceof Cluster) {
    const [view, storm] = await Promise.all([store.startView(runbook, node), breakers.recordNodeActivity(opts.caps, node, source)]);
    return { view, storm };
  }
  const p = opts.redis.pipeline();
  store.queueStartView(p, runbook, node);
  local.queueNodeActivity(p, opts.caps, node, source);
  const replies = await execAll(p);
  return { view: store.readStartView(replies, runbook, node), storm: stormTrip(replies[2]) };
}

type ModeOf = (o: Overrides) => { mode: Mode; why: string };

/**
 * Before every step the newest decisions, read again in one round trip: a pause parks the job; a
 * switch to dry-run since the job began stops it before a destructive step. A destructive step's
 * breaker answer from the receiver relays its newest records too: when they taught this worker
 * something, what was read before the step is opened again against them (a record put back in
 * Redis since the job began is then a replay), and the step stops if that says pause or dry-run
 * (its slot stays taken: one slot too many counted, never one too few).
 */
function stepGate(c: Controls, job: JobStart, mode: { mode: Mode; why: string }, modeWith: ModeOf): StepGate {
  const { store, node } = c;
  const stopsIt = (latest: StartView, step: PlannedStep): GateDecision | undefined => {
    if (latest.paused) return { go: false, park: { reason: 'paused', why: latest.paused } };
    if (mode.mode === 'dry-run' || !step.destructive) return undefined;
    const current = modeWith(latest.overrides);
    if (current.mode === 'dry-run')
      throw new RefusedError([`stopped before destructive step ${step.id}: the mode is now dry-run (${current.why}); this job began in enforce (${mode.why})`]);
    return undefined;
  };
  return {
    async beforeStep(step, plan) {
      const replies = await store.startReplies(job.runbook, node);
      const stop = stopsIt(store.readStartView(replies, job.runbook, node), step);
      if (stop) return stop;
      if (mode.mode === 'dry-run') return GO;
      const a = await approvalGate(c, job, step, plan);
      if (!a.go) return a;
      const learned = c.relayed.learned;
      const b = await breakerGate(c, job, step);
      if (!b.go || c.relayed.learned === learned) return b;
      return stopsIt(store.readStartView(replies, job.runbook, node), step) ?? b;
    },
  };
}

/** At most one warning per this long that the controls' copy was missed. */
const COPY_MISSED_LOG_MS = 600_000;

/** A node's job starts read its queue's copy of the controls (one slot: no connection to the shared keys' master). */
function controlsStore(opts: JobControlsOptions, now: () => Date): ControlsStore {
  let missedAt = Number.NEGATIVE_INFINITY;
  return new ControlsStore(opts.redis, opts.prefix, now, opts.trust, {
    ...(opts.node ? { ownQueue: opts.queue } : {}),
    ...(opts.oneSlot ? { mirrors: true, copyOnly: true } : {}),
    onCopyMissed: (queue) => {
      const t = now().getTime();
      if (t - missedAt < COPY_MISSED_LOG_MS) return;
      missedAt = t;
      opts.log.warn({ queue }, "this queue's copy of the controls is missing or stale (no receiver has synced it lately); read the shared controls");
    },
  });
}

export function createJobControls(opts: JobControlsOptions): JobControls {
  const now = opts.now ?? (() => new Date());
  const store = controlsStore(opts, now);
  const approvals = new ApprovalStore(opts.redis, opts.prefix, opts.trust);
  const local = opts.breakers ? undefined : new Breakers(opts.redis, opts.prefix, now);
  const breakers: BreakerPort = opts.breakers ?? local!;
  const node = opts.node;
  const c: Controls = { opts, now, store, approvals, breakers, local, node, relayed: { learned: 0 } };
  // The receiver's relayed records of this node's fields, taken as the newest known before any read is opened.
  if (node)
    opts.breakers?.onRelay?.((relay) => {
      c.relayed.learned += store.learnRelayed(node, relay);
    });

  return {
    recheckMs: opts.recheckMs,
    async begin(job) {
      const [
        {
          view: { overrides, paused: pausedWhy },
          storm,
          uncounted,
        },
        label,
      ] = await Promise.all([startReads(c, job), node && opts.nodeModeLabel ? opts.nodeModeLabel().catch(() => undefined) : Promise.resolve(undefined)]);
      if (storm) opts.log.error({ breaker: 'storm', why: storm.why }, 'storm breaker tripped: destructive steps stop fleet-wide until it is reset');
      const modeWith = (o: typeof overrides) =>
        effectiveMode({
          runbook: job.runbook,
          ...(node ? { node } : {}),
          configured: job.configuredMode,
          ...o,
          ...(label ? { nodeLabel: label } : {}),
        });
      const mode = modeWith(overrides);
      const gate = stepGate(c, job, mode, modeWith);
      if (pausedWhy) return { mode: mode.mode, modeWhy: mode.why, park: { reason: 'paused', why: pausedWhy }, gate };
      // A start the storm breaker did not see waits in enforce; in dry-run nothing it does needs
      // a breaker (its steps only say what they would do), so it goes on, uncounted, and says so.
      if (uncounted && mode.mode === 'enforce')
        return {
          mode: mode.mode,
          modeWhy: mode.why,
          park: {
            reason: 'breaker',
            why: `this start could not be counted towards the storm breaker: ${uncounted}; starting again at the next recheck`,
          },
          gate,
        };
      if (uncounted) opts.log.warn({ jobId: job.jobId, err: uncounted }, 'dry-run job starts without being counted towards the storm breaker');
      return { mode: mode.mode, modeWhy: mode.why, gate };
    },
    async park(p) {
      const since = now().toISOString();
      await store.park({ ...p, queue: opts.queue, ...(node ? { node } : {}), since });
      return since;
    },
    unpark: (jobId) => store.unpark(opts.queue, jobId),
    audit: (action, target, why) => store.audit(action, target, { by: node ?? 'cluster-worker', why: why.slice(0, 4000) }, opts.queue),
  };
}

function waitingWhy(rec: ApprovalRecord): string {
  return `waiting for approval of ${rec.steps.length} step(s) (${rec.steps.map((s) => `${s.id}: ${s.why}`).join('; ')}) until ${rec.expiresAt}; POST /v1/jobs/${rec.jobId}/approve or /reject`;
}
