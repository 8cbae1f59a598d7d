import { nodeOfQueue } from '../../src/core/catalogue/queues.ts';
import { keepFinished, keepFor } from '../../src/core/catalogue/policy.ts';
import { recordNotRun } from '../../src/adapters/stats/job-stats.ts';
import type { JobEventInput, RecordedJobEvent } from '../../src/adapters/kube/job-events.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { agentSeen, queuePresence, type WaitingJob } from '../../src/adapters/jobstore/agent-presence.ts';
import { failStranded } from '../../src/adapters/jobstore/fail-stranded.ts';
import { knownQueuesKey } from '../../src/adapters/redis/known-queues.ts';
import { writeNoAgentRecord } from '../../src/adapters/jobstore/no-agent-record.ts';
import type { RedisConnection } from '../../src/adapters/redis/redis.ts';
import type { AgentStore } from '../../src/adapters/jobstore/agent-store.ts';
import type { ClusterWorkerConfig } from '../../src/core/config/schema.ts';

// A job on `vm-node-{<node>}` is taken only by that node's agent. When none runs there (the
// DaemonSet excluded by a nodeSelector or taint, the agent crash-looping, a node name that no
// longer exists), the job would wait forever, silently. This check, run periodically by ONE
// process (the cluster worker: a singleton Deployment, so one Event and one failure per job and
// one writer of the gauge; the receiver runs replicas), finds jobs that waited longer than
// `graceMs` on a queue where no agent checked in for longer than `graceMs` (agent-presence.ts),
// and for each: a warning log naming node and job, a Kubernetes Event `NoAgent` on the Node, the
// gauge volume_medic_jobs_without_agent (through no-agent-record.ts), and after `deadlineMs` the
// job fails with a reason naming the missing agent (fail-stranded.ts).

export interface NoAgentWatchOptions {
  redis: RedisConnection;
  prefix: string;
  /** Absence of an agent, and a job's wait, longer than this counts (>= 2 stalled intervals). */
  graceMs: number;
  /** NO_AGENT_DEADLINE_SECONDS: a stranded job waiting longer than this fails; 0: never. */
  deadlineMs: number;
  /** How often to check; the gauge's record lives 3 intervals. */
  intervalMs: number;
  log: Logger;
  events?: { recordJobEvent(input: JobEventInput): Promise<RecordedJobEvent> };
  /** The connection the failing pass takes jobs on (a worker connection: no retry limit per request). */
  workerConnection: () => RedisConnection;
  /** Quit that connection on close (default true); false when its owner (RedisConnections) closes it. */
  closeWorkerConnection?: boolean;
  /** How long a failed job is kept: the node queues' window, as their agents keep it (default: the policy's, catalogue/policy.ts keepFinished). */
  keepFailed?: { age: number };
  now?: () => number;
}

export interface NoAgentCheck {
  /** Stranded jobs by node. */
  stranded: Map<string, WaitingJob[]>;
  failed: string[];
}

/** How often the cluster worker checks. */
const NO_AGENT_CHECK_MS = 30_000;

/**
 * An agent checks in every LOCK_DURATION_MS (its stalled interval); two missed check-ins plus a
 * check interval, and at least a minute, before its absence counts.
 */
const noAgentGraceMs = (lockDurationMs: number): number => Math.max(60_000, 2 * lockDurationMs + NO_AGENT_CHECK_MS);

/** Queues checked at once: each is one script call; more only queue up in Redis. */
const CONCURRENCY = 256;

export class NoAgentWatch {
  private readonly o: NoAgentWatchOptions;
  private readonly now: () => number;
  private readonly startedAt: number;
  /** queue -> when an agent was last seen on it by this process. */
  private readonly lastSeen = new Map<string, number>();
  /** Jobs already reported (log + Event), by queue. */
  private readonly reported = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private worker: RedisConnection | undefined;
  private stopped = false;

  constructor(o: NoAgentWatchOptions) {
    this.o = o;
    this.now = o.now ?? Date.now;
    // Nothing seen before this process started: absence is counted from here.
    this.startedAt = this.now();
  }

  start(): void {
    const tick = (): void => {
      if (this.stopped) return;
      this.running = this.check()
        .catch((err: unknown) => this.o.log.warn({ err: (err as Error).message }, 'no-agent check failed; trying again next interval'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.o.intervalMs);
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (this.o.closeWorkerConnection !== false) await this.worker?.quit().catch(() => this.worker?.disconnect());
  }

  async check(): Promise<NoAgentCheck> {
    const { redis, prefix, graceMs, deadlineMs } = this.o;
    const now = this.now();
    const queues = (await redis.smembers(knownQueuesKey(prefix))).filter((q) => nodeOfQueue(q) !== undefined);
    const stranded = new Map<string, WaitingJob[]>();
    const absent = new Map<string, number>();
    for (let i = 0; i < queues.length; i += CONCURRENCY) {
      const batch = queues.slice(i, i + CONCURRENCY);
      const found = await Promise.all(batch.map((q) => queuePresence(redis, prefix, q, now - graceMs)));
      batch.forEach((queue, j) => {
        const p = found[j]!;
        if (p.agentSeen) {
          this.lastSeen.set(queue, now);
          this.reported.delete(queue);
          return;
        }
        const since = this.lastSeen.get(queue) ?? this.startedAt;
        if (now - since <= graceMs) return;
        const jobs = p.waiting.filter((w) => now - w.since > graceMs);
        if (jobs.length === 0) {
          this.reported.delete(queue);
          return;
        }
        stranded.set(queue, jobs);
        absent.set(queue, since);
      });
    }
    const known = new Set(queues);
    for (const q of this.lastSeen.keys()) if (!known.has(q)) this.lastSeen.delete(q);
    for (const q of this.reported.keys()) if (!stranded.has(q)) this.reported.delete(q);

    const failed: string[] = [];
    let count = 0;
    for (const [queue, jobs] of stranded) {
      const node = nodeOfQueue(queue)!;
      const since = absent.get(queue)!;
      const agentNote = this.lastSeen.has(queue)
        ? `no node agent has checked in on queue ${queue} since ${new Date(since).toISOString()}`
        : `no node agent has checked in on queue ${queue} since the check started at ${new Date(since).toISOString()}`;
      await this.report(queue, node, jobs, agentNote, now);
      const overdue = deadlineMs > 0 ? jobs.filter((j) => now - j.since > deadlineMs) : [];
      let gone: string[] = [];
      if (overdue.length > 0) gone = await this.fail(queue, node, overdue, agentNote);
      failed.push(...gone);
      count += jobs.length - gone.length;
    }
    const nodes = [...stranded].filter(([, jobs]) => jobs.some((j) => !failed.includes(j.id))).length;
    await writeNoAgentRecord(redis, prefix, { jobs: count, nodes, checkedAt: now }, 3 * this.o.intervalMs);
    return { stranded, failed };
  }

  private async report(queue: string, node: string, jobs: readonly WaitingJob[], agentNote: string, now: number): Promise<void> {
    let seen = this.reported.get(queue);
    if (!seen) this.reported.set(queue, (seen = new Set()));
    const deadline =
      this.o.deadlineMs > 0
        ? `; it fails once it has waited ${Math.round(this.o.deadlineMs / 1000)} s (NO_AGENT_DEADLINE_SECONDS)`
        : '; NO_AGENT_DEADLINE_SECONDS=0: it is never failed for this';
    for (const job of jobs) {
      if (seen.has(job.id)) continue;
      seen.add(job.id);
      const waited = Math.round((now - job.since) / 1000);
      this.o.log.warn({ node, queue, jobId: job.id, runbook: job.runbook, waitingSeconds: waited }, 'job waits on a node queue that no node agent serves');
      await this.o.events?.recordJobEvent({
        jobId: job.id,
        runbook: job.runbook,
        outcome: 'no-agent',
        regarding: { kind: 'Node', name: node },
        message: `job has waited ${waited} s and ${agentNote}: is the node agent scheduled on node ${node}${deadline}`,
      });
    }
  }

  private async fail(queue: string, node: string, overdue: readonly WaitingJob[], agentNote: string): Promise<string[]> {
    const { redis, prefix } = this.o;
    const reason = `no node agent: ${agentNote}, and the job waited longer than NO_AGENT_DEADLINE_SECONDS (${Math.round(this.o.deadlineMs / 1000)} s) without running on node ${node}`;
    const ids = new Set(overdue.map((j) => j.id));
    const failed = await failStranded({
      connection: (this.worker ??= this.o.workerConnection()),
      prefix,
      queue,
      ids,
      reason,
      keepFailed: this.o.keepFailed ?? keepFinished('node'),
      stillAbsent: async () => !(await agentSeen(redis, prefix, queue)),
    });
    for (const id of failed) {
      const job = overdue.find((j) => j.id === id)!;
      this.o.log.warn({ node, queue, jobId: id, runbook: job.runbook }, 'failed a job no node agent took before NO_AGENT_DEADLINE_SECONDS');
      await recordNotRun(redis, prefix, job.runbook, 'no-agent').catch(() => {});
      await this.o.events?.recordJobEvent({
        jobId: id,
        runbook: job.runbook,
        outcome: 'failed',
        regarding: { kind: 'Node', name: node },
        message: `failed without running: ${reason}`,
      });
      this.reported.get(queue)?.delete(id);
    }
    return failed;
  }
}

/** The cluster worker's watch, as configuration says, on its store's connections (the producer's, and one for failing jobs). */
export function startNoAgentWatch(
  config: Pick<ClusterWorkerConfig, 'queuePrefix' | 'lockDurationMs' | 'noAgentDeadlineSeconds' | 'dedupWindowMs'>,
  store: AgentStore,
  events: NoAgentWatchOptions['events'],
  log: Logger,
): NoAgentWatch {
  const watch = new NoAgentWatch({
    redis: store.held('producer', 'producer'),
    prefix: config.queuePrefix,
    graceMs: noAgentGraceMs(config.lockDurationMs),
    deadlineMs: config.noAgentDeadlineSeconds * 1000,
    intervalMs: NO_AGENT_CHECK_MS,
    log: log.child({ component: 'no-agent' }),
    ...(events ? { events } : {}),
    workerConnection: () => store.held('no-agent', 'worker'),
    closeWorkerConnection: false,
    keepFailed: keepFor(config.dedupWindowMs.node),
  });
  watch.start();
  return watch;
}
