import { Job, type JobsOptions, Queue } from 'bullmq';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import { RUNBOOK_POLICY } from '../../core/catalogue/policy.ts';
import { placementOfQueue } from '../../core/catalogue/queues.ts';
import { type Enqueued, StoreUnavailableError } from '../../core/jobs/job-store.ts';
import type { Sealer } from '../../core/trust/seal.ts';
import { sealedJobText } from '../../core/trust/work.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import type { NodeStart } from '../controls/breakers.ts';
import type { RedisConnection } from '../redis/redis.ts';
import type { ReplicaAck } from '../redis/replica-ack.ts';
import { BatchAdd, captureAdd, DATA_PLACEHOLDER, type BatchIndex, type BatchItem, type BatchReply } from './batch-add.ts';
import type { KnownJobs } from './known-jobs.ts';

// The store pipeline of the dispatcher (dispatcher.ts): one batch of jobs to Redis. Per batch:
// the BullMQ queue objects it needs, the queue registry and the controls of new queues, ONE
// script call for every job (batch-add.ts: per job a read of the job hash, did it exist and since
// when, immediately followed by BullMQ's own add script, which folds a repeat), the job replaced
// where it outlived its window, the incident index, the replicas' acknowledgement, and then the
// answers (each job remembered as known).

/**
 * BullMQ options of a job: its key as id (a repeat folds into it) and the runbook's retries.
 * How long it is kept once finished (its deduplication window) is not the job's to say: the
 * worker that finishes it keeps every finished job of its queue for the queue's window
 * (catalogue/policy.ts `keepFinished`, workers/engine/runbook-worker.ts), which is what makes
 * the window hold. bull-job-store.ts's add() (an operator's retry) takes them too.
 */
export function jobOptions(job: RemediationJob) {
  const policy = RUNBOOK_POLICY[job.runbook];
  return {
    jobId: job.key,
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs, jitter: policy.jitter },
  } satisfies JobsOptions;
}

/** The answer for a job put on `queueName`: stored as new, or folded into the job of the same key (also the dispatcher's for a job it knows). */
export function enqueuedAnswer(job: RemediationJob, queueName: string, deduplicated: boolean): Enqueued {
  const node = 'node' in job.target ? job.target.node : undefined;
  return { id: job.key, queue: queueName, runbook: job.runbook, ...(node ? { node } : {}), key: job.key, deduplicated };
}

/**
 * A sorted set of the jobs stored as new (the console's incident index,
 * src/adapters/jobstore/incident-index.ts): its key, how many members it keeps, a job's member, and how to
 * write it in a call of its own (where the batch's script cannot: a Redis Cluster).
 */
export interface StoredIndex {
  readonly key: string;
  readonly keep: number;
  member(job: Enqueued): string;
  record(jobs: readonly Enqueued[], at: number): Promise<void>;
}

/**
 * How many entries BullMQ keeps in a queue's events stream (`<queue>:events`; its default is
 * 10,000). Nothing of volume-medic reads that stream (no QueueEvents), but every finished job adds
 * its whole result there (the `completed` event carries the return value): a residual cleanup of
 * many dead maps returns hundreds of KiB (bench/README.md, "Figures behind the code"), so a
 * node's stream grew with its history, not with its retained jobs, past any per-node memory budget (bench/node-redis-footprint.ts, docs/decisions/0006). An entry
 * that large fills a stream node of its own, so BullMQ's approximate trim (`MAXLEN ~`) keeps about
 * this many of them.
 */
export const QUEUE_EVENTS_KEPT = 20;

/** WORK_SEAL_TTL_SECONDS' default. */
const DEFAULT_SEAL_TTL_MS = 86_400_000;

/** What the pipeline is told (the dispatcher's options, DispatcherOptions, extend these). */
export interface StorePipelineOptions {
  prefix: string;
  /**
   * Told once per script call about the jobs it stored as new (not folded into existing ones),
   * for the receiver's "jobs stored" log line: one line per call, not per request.
   */
  onStored?: (jobs: readonly Enqueued[]) => void;
  /**
   * Seals every job with this process's role key (src/core/trust): agents refuse work without a valid
   * seal. Undefined only where ALLOW_UNSIGNED_WORK runs without keys.
   */
  sealer: Sealer | undefined;
  /** How long a sealed job stays valid (WORK_SEAL_TTL_SECONDS). */
  sealTtlMs?: number;
  /**
   * Whether stored jobs' queues go into the queue registry (`vm:queues`, what the fleet view and
   * the no-agent check read). Default true. An enrolled node agent passes false: its own Redis
   * user may not write the registry, and the receiver recorded its queue when it enrolled.
   */
  recordsQueues?: boolean;
  /**
   * Runs before the first job of each queue this process has not recorded yet is stored (the
   * receiver copies the controls into a new node queue's slot: control-mirrors.ts); its failure
   * fails the batch, as Redis being away does.
   */
  prepareQueues?: (queues: string[]) => Promise<unknown>;
  /**
   * REDIS_ACK_REPLICAS: a job is answered (and remembered as known) only after replicas
   * acknowledged it (replica-ack.ts); when they do not, the request fails as StoreUnavailable.
   */
  replicaAck?: Pick<ReplicaAck, 'confirm'>;
  /**
   * Every job stored as new is added to this index: in the batch's own script call on a single
   * Redis or a Sentinel primary (one round trip per batch), in a call of its own after the batch
   * on a Cluster (the index is one key, in another slot than most queues; not awaited).
   */
  index?: StoredIndex;
  /** The index missed jobs (they are stored all the same). */
  onIndexError?: (err: Error) => void;
  /**
   * Counts the nodes of the jobs a batch stored as new towards the storm breaker (the receiver's
   * Breakers), in one call after the add and before any answer. Each node job is then sealed
   * with `stormCounted`, and its agent counts nothing at its start. A count that fails fails the
   * batch's answers (503: the sender sends again), and is made again every RECOUNT_MS until it
   * lands, and at those jobs' next store here though it folds into them (a sender's retry may
   * reach another replica, which would not count it): a node is counted once too often, never
   * once too few, while this process lives.
   */
  countNodes?: (starts: readonly NodeStart[]) => Promise<unknown>;
}

/** Jobs whose count failed, remembered until a count lands (oldest dropped beyond this). */
const UNCOUNTED_KEPT = 10_000;
/** How soon a failed count is made again. */
const RECOUNT_MS = 1_000;

/** A node queue's jobs count their node towards the storm breaker (a node agent's start did); the cluster worker's never did. */
const countsOn = (queueName: string): boolean => placementOfQueue(queueName) === 'node';

/** A job waiting for its batch. */
export interface PendingJob {
  job: RemediationJob;
  queueName: string;
  /** When the request that asked for it answers 503 (epoch ms): not sent after that. */
  deadline: number;
  resolve: (e: Enqueued) => void;
  reject: (err: unknown) => void;
}

export class StorePipeline {
  readonly #queues = new Map<string, Queue>();
  /** Queues this connection has recorded in the known-queues set. */
  readonly #recordedQueues = new Set<string>();
  /** Queues whose client is initialised (BullMQ's scripts are defined on the connection). */
  readonly #ready = new Set<string>();
  readonly #batchAdd: BatchAdd;
  readonly #redis: RedisConnection;
  readonly #o: StorePipelineOptions;
  readonly #known: KnownJobs;
  readonly #windowMs: (queueName: string) => number;
  readonly #now: () => number;
  /** Jobs stored as new whose node the count missed, by `<queue> <key>`: counted again until it lands. */
  readonly #uncounted = new Map<string, NodeStart>();
  #recount: NodeJS.Timeout | undefined;

  constructor(redis: RedisConnection, o: StorePipelineOptions, known: KnownJobs, windowMs: (queueName: string) => number, now: () => number) {
    this.#redis = redis;
    this.#o = o;
    this.#known = known;
    this.#windowMs = windowMs;
    this.#now = now;
    this.#batchAdd = new BatchAdd(redis);
  }

  queue(name: string): Queue {
    let q = this.#queues.get(name);
    if (!q) {
      // BullMQ checks the server's version with a full INFO per queue object. One check per
      // connection is enough: a storm of 10,000 new nodes sent 10,000 INFOs, each costlier the
      // more clients Redis has (bench/fleet.ts).
      q = new Queue(name, {
        connection: this.#redis,
        prefix: this.#o.prefix,
        skipVersionCheck: this.#queues.size > 0,
        streams: { events: { maxLen: QUEUE_EVENTS_KEPT } },
      });
      // Errors surface through the add() promise; this only keeps a dropped connection from
      // becoming an unhandled 'error' event.
      q.on('error', () => {});
      this.#queues.set(name, q);
      // BullMQ keeps a queue whose start failed (the connection ended before it was ready)
      // failing for good: forget it, so the next use makes a new one on the revived connection.
      const made = q;
      made.client.catch(() => {
        if (this.#queues.get(name) !== made) return;
        this.#queues.delete(name);
        this.#ready.delete(name);
        made.close().catch(() => {});
      });
    }
    return q;
  }

  /** Records every queue again from the next batch on (Redis may have lost the registry). */
  forgetRecordedQueues(): void {
    this.#recordedQueues.clear();
  }

  /** Stores one batch; each job's promise is settled (a failure of the whole call is the caller's to spread). */
  async send(batch: PendingJob[]): Promise<void> {
    batch = await this.#readyBatch(batch);
    if (batch.length === 0) return;
    const newQueues = this.#newQueues(batch);
    if (newQueues.size > 0 && this.#o.prepareQueues) await this.#o.prepareQueues([...newQueues]);
    const recorded = newQueues.size > 0 ? this.#redis.sadd(knownQueuesKey(this.#o.prefix), ...newQueues) : undefined;
    // No later than the timestamp BullMQ gives each job below (same clock in production).
    const sentAt = this.#now();
    const index = this.#o.index;
    const inScript = index !== undefined && !this.#redis.isCluster;
    const items = batch.map((b) => this.#item(b, inScript ? index : undefined));
    const onIndexError = (err: Error): void => this.#o.onIndexError?.(err);
    const batchIndex: BatchIndex | undefined = inScript ? { key: index.key, keep: index.keep, at: sentAt, onError: onIndexError } : undefined;
    const [replies] = await Promise.all([this.#batchAdd.add(items, batchIndex), recorded]);
    if (recorded) for (const q of newQueues) this.#recordedQueues.add(q);
    await this.#replaceExpired(batch, items, replies, batchIndex);
    const { stored, done } = this.#answers(batch, replies, sentAt);
    // In Redis now (on the primary), whatever the answer below.
    if (stored.length > 0) {
      if (index && !inScript) index.record(stored, sentAt).catch((err: unknown) => onIndexError(err instanceof Error ? err : new Error(String(err))));
      this.#o.onStored?.(stored);
    }
    if (await this.#count(done)) this.#settle(done);
  }

  /**
   * The storm breaker's count of the nodes of the jobs stored as new (and of earlier ones whose
   * count failed); false, every answer failed, when it could not be made.
   */
  async #count(done: readonly { b: PendingJob; a: Enqueued }[]): Promise<boolean> {
    if (!this.#o.countNodes) return true;
    const due = new Map<string, NodeStart>();
    for (const { b, a } of done) {
      const id = `${b.queueName} ${b.job.key}`;
      if (a.node !== undefined && countsOn(b.queueName) && (!a.deduplicated || this.#uncounted.has(id)))
        due.set(id, { node: a.node, source: b.job.evidence[0]?.source });
    }
    if (due.size === 0) return true;
    try {
      await this.#countNow(due);
      return true;
    } catch (err) {
      const why = new StoreUnavailableError(`jobs stored but their nodes not counted towards the storm breaker: ${(err as Error).message}`);
      for (const { b } of done) b.reject(why);
      return false;
    }
  }

  /** Counts `due`; what it could not count is kept and counted again every RECOUNT_MS. */
  async #countNow(due: ReadonlyMap<string, NodeStart>): Promise<void> {
    try {
      await this.#o.countNodes!([...due.values()]);
      for (const id of due.keys()) this.#uncounted.delete(id);
    } catch (err) {
      for (const [id, start] of due) this.#uncounted.set(id, start);
      while (this.#uncounted.size > UNCOUNTED_KEPT) this.#uncounted.delete(this.#uncounted.keys().next().value!);
      if (!this.#recount) {
        this.#recount = setTimeout(() => {
          this.#recount = undefined;
          if (this.#uncounted.size > 0) this.#countNow(new Map(this.#uncounted)).catch(() => {});
        }, RECOUNT_MS);
        this.#recount.unref();
      }
      throw err;
    }
  }

  /**
   * BullMQ defines its scripts on the connection when a queue first initialises: waits for each
   * new queue of the batch (all our queues share one connection). A new queue waits for Redis to
   * be ready: when that outlived the request's deadline, the sender got 503 and will retry;
   * storing the job now, behind that answer, is not wanted.
   */
  async #readyBatch(batch: PendingJob[]): Promise<PendingJob[]> {
    for (const name of new Set(batch.map((b) => b.queueName))) if (!this.#ready.has(name)) await this.queue(name).client;
    for (const b of batch) this.#ready.add(b.queueName);
    const now = this.#now();
    const late = batch.filter((b) => b.deadline <= now);
    for (const b of late) b.reject(new StoreUnavailableError('Redis was not ready before the deadline'));
    return late.length > 0 ? batch.filter((b) => b.deadline > now) : batch;
  }

  #newQueues(batch: readonly PendingJob[]): Set<string> {
    const newQueues = new Set<string>();
    if (this.#o.recordsQueues !== false) for (const b of batch) if (!this.#recordedQueues.has(b.queueName)) newQueues.add(b.queueName);
    return newQueues;
  }

  #item(b: PendingJob, index: StoredIndex | undefined): BatchItem {
    const queue = this.queue(b.queueName);
    const sealer = this.#o.sealer;
    // The job encoded once, for its seal and as the text stored (captureAdd puts it in place of BullMQ's encoding).
    // Marked counted only where this pipeline counts its node (never a mark the job came with).
    const { stormCounted: _came, ...plain } = b.job;
    const counted = this.#o.countNodes && countsOn(b.queueName) ? { ...plain, stormCounted: true as const } : plain;
    const text = sealer ? sealedJobText(sealer, b.queueName, counted, this.#o.sealTtlMs ?? DEFAULT_SEAL_TTL_MS) : JSON.stringify(counted);
    const job = new Job(queue, b.job.runbook, DATA_PLACEHOLDER, jobOptions(b.job), b.job.key);
    // The job's timestamp is read right before its add, in the same script call: exact within
    // one receiver (concurrent repeats are coalesced by the dispatcher); across receiver replicas
    // two racing first deliveries run one after the other in Redis, so the second sees the first.
    const item: BatchItem = { jobKey: queue.toKey(b.job.key), call: captureAdd(job, text) };
    if (index) item.member = index.member(enqueuedAnswer(b.job, b.queueName, false));
    return item;
  }

  /** Each job's answer (its failure rejected at once), and those stored as new. */
  #answers(batch: readonly PendingJob[], replies: readonly BatchReply[], sentAt: number) {
    const stored: Enqueued[] = [];
    const done: { b: PendingJob; a: Enqueued; storedAt: number }[] = [];
    for (let i = 0; i < batch.length; i++) {
      const b = batch[i]!;
      const r = replies[i]!;
      if ('error' in r) {
        b.reject(r.error);
        continue;
      }
      if (typeof r.result === 'number' && r.result < 0) {
        b.reject(new Error(`BullMQ refused job ${b.job.key} (code ${r.result})`));
        continue;
      }
      const a = enqueuedAnswer(b.job, b.queueName, r.existingTimestamp !== null);
      if (!a.deduplicated) stored.push(a);
      done.push({ b, a, storedAt: r.existingTimestamp !== null ? Number(r.existingTimestamp) : sentAt });
    }
    return { stored, done };
  }

  /** Answers the jobs, each remembered as known; with REDIS_ACK_REPLICAS once replicas have them. */
  #settle(done: readonly { b: PendingJob; a: Enqueued; storedAt: number }[]): void {
    const settle = (): void => {
      for (const { b, a, storedAt } of done) {
        this.#known.remember(b.queueName, b.job.key, storedAt);
        b.resolve(a);
      }
    };
    const ack = this.#o.replicaAck;
    if (!ack || done.length === 0) {
      settle();
      return;
    }
    // Answered only once replicas have the jobs (a folded repeat too: the job it folded into may
    // not be replicated yet). Not awaited: the next batch is stored while this one waits.
    ack.confirm().then(settle, (err: unknown) => {
      const why = new StoreUnavailableError(`jobs stored but not acknowledged by a replica: ${(err as Error).message}`);
      for (const { b } of done) b.reject(why);
    });
  }

  /**
   * A repeat that found a job created before its window began may have found one that outlived
   * it: BullMQ removes finished jobs by age only when another job on the same queue finishes, so
   * on a quiet node queue the job of an outage hours ago would swallow the next outage (the same
   * key: node + boot). Such a job, finished longer than its window ago, is removed (BullMQ's own
   * removal, which refuses a locked job) and the new one stored in its place, in `replies`. Rare,
   * so one read per such job; a job not finished, or finished within the window, still folds.
   * A later job with the same id starts with a fresh journal on the host (workers/engine/journal.ts).
   */
  async #replaceExpired(batch: readonly PendingJob[], items: readonly BatchItem[], replies: BatchReply[], index: BatchIndex | undefined): Promise<void> {
    const now = this.#now();
    const old = batch.flatMap((b, i) => {
      const r = replies[i]!;
      return 'error' in r || r.existingTimestamp === null || Number(r.existingTimestamp) > now - this.#windowMs(b.queueName) ? [] : [i];
    });
    if (old.length === 0) return;
    const expired: number[] = [];
    await Promise.all(
      old.map(async (i) => {
        const b = batch[i]!;
        const job = await Job.fromId(this.queue(b.queueName), b.job.key);
        if (!job?.finishedOn || job.finishedOn > now - this.#windowMs(b.queueName)) return;
        // Removal fails for a job someone holds (a retry taken meanwhile): it then folds as before.
        if (
          await job.remove().then(
            () => true,
            () => false,
          )
        )
          expired.push(i);
      }),
    );
    if (expired.length === 0) return;
    expired.sort((a, c) => a - c);
    const again = await this.#batchAdd.add(
      expired.map((i) => items[i]!),
      index,
    );
    expired.forEach((i, j) => {
      replies[i] = again[j]!;
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.#recount);
    await Promise.all([...this.#queues.values()].map((q) => q.close()));
    this.#queues.clear();
  }
}
