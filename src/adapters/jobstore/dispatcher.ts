import { Job, Queue, type JobsOptions } from 'bullmq';
import type { RedisConnection } from '../redis/redis.ts';
import { BatchAdd, captureAdd, DATA_PLACEHOLDER, type BatchIndex, type BatchItem, type BatchReply } from './batch-add.ts';
import { placementOfQueue, queueFor } from '../../core/catalogue/queues.ts';
import { RUNBOOK_POLICY, queueWindowMs } from '../../core/catalogue/policy.ts';
import type { RemediationJob } from '../../core/catalogue/jobs.ts';
import type { DedupWindows } from '../../core/config/derived.ts';
import { knownQueuesKey } from '../redis/known-queues.ts';
import type { ReplicaAck } from '../redis/replica-ack.ts';
import { GenerationalMap } from '../../core/collections/generational-map.ts';
import type { Sealer } from '../../core/trust/seal.ts';
import { sealedJobText } from '../../core/trust/work.ts';
import { type Enqueued, type JobEnqueue, StoreUnavailableError } from '../../core/jobs/job-store.ts';

// Puts triaged jobs on their queues. The job id IS the idempotency key, so BullMQ itself folds a
// repeat into the existing job for as long as that job is kept; completed and failed jobs are
// kept for the runbook's deduplication window, which is what makes the window hold.
//
// Hot path. Three things keep Redis work per webhook small:
// 1. Coalescing: concurrent requests for the same key share one store (`inFlight`).
// 2. Batching: every job asked for in one turn of the event loop goes out in ONE script call
//    (batch-add.ts), one round trip for all requests of that turn: per job a read of the job
//    hash (did it exist, and since when) immediately followed by BullMQ's own add script, which
//    folds a repeat.
// 3. Known keys: a key this process stored or saw stored is answered "deduplicated" from memory
//    for a while, with no round trip (see `rememberUntil` for why that is safe and how long).

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
 * 8 dead maps is ~320 KiB, so a node's stream grew with its history, not with its retained jobs,
 * past any per-node memory budget (bench/node-redis-footprint.ts, docs/decisions/0006). An entry
 * that large fills a stream node of its own, so BullMQ's approximate trim (`MAXLEN ~`) keeps about
 * this many of them.
 */
export const QUEUE_EVENTS_KEPT = 20;

export interface DispatcherOptions {
  prefix: string;
  timeoutMs: number;
  /** Each placement's window (the configuration's dedupWindowMs); default the runbooks' own. */
  dedupWindowMs?: DedupWindows;
  /**
   * Longest time a known key is answered from memory (default 60 s). Bounds what the known-key
   * answer cannot see: an operator deleting the job, or Redis losing data while connected.
   * 0 turns the known-key answer off.
   */
  knownKeyMaxMs?: number;
  /**
   * At most this many known keys are remembered (default 100,000): the newest half always, older
   * ones while there is room (GenerationalMap).
   */
  knownKeyLimit?: number;
  now?: () => number;
  /**
   * Told once per script call about the jobs it stored as new (not folded into existing ones),
   * for the receiver's "jobs stored" log line: one line per call, not per request (a
   * line per request cost ~13 us of a new job's ~100).
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
}

/**
 * Margin for clocks: a job's age on retention is measured by the finishing worker's clock from
 * its finishedOn, our bound uses the job's timestamp written by a receiver's clock.
 */
const CLOCK_SKEW_MARGIN_MS = 60_000;

/**
 * Script calls on their way at once. Two keep Redis busy while the receiver encodes the next
 * batch (one left both idle in turn: +7% new jobs/s measured with bench/profile.ts); more only
 * made batches smaller.
 */
const MAX_IN_FLIGHT = 2;

/** WORK_SEAL_TTL_SECONDS' default. */
const DEFAULT_SEAL_TTL_MS = 86_400_000;

/** How long jobs wait for the calls on their way before one more is sent alongside them. */
const STALL_MS = 20;

interface Pending {
  job: RemediationJob;
  queueName: string;
  /** When the request that asked for it answers 503 (epoch ms): not sent after that. */
  deadline: number;
  resolve: (e: Enqueued) => void;
  reject: (err: unknown) => void;
}

export class Dispatcher implements JobEnqueue {
  private readonly queues = new Map<string, Queue>();
  /** Enqueues under way in this process, by key: a concurrent repeat waits for the first. */
  private readonly inFlight = new Map<string, Promise<Enqueued>>();
  /**
   * key -> its queue and until when (epoch ms) that job is certainly still stored. By the key
   * alone, the queue compared on lookup: the key string is the job's own, whose hash V8 keeps,
   * where a queue + key string was built and hashed twice per new job. A key known on another
   * queue is simply not known.
   */
  private readonly known: GenerationalMap<string, Known>;
  /** Queues this connection has recorded in the known-queues set. */
  private readonly recordedQueues = new Set<string>();
  /** Queues whose client is initialised (BullMQ's scripts are defined on the connection). */
  private readonly ready = new Set<string>();
  private readonly batchAdd: BatchAdd;
  private pending: Pending[] = [];
  private flushScheduled = false;
  /** Script calls sent and not answered yet. */
  private sending = 0;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly redis: RedisConnection;
  private readonly opts: DispatcherOptions;
  private readonly now: () => number;
  private readonly knownKeyMaxMs: number;

  constructor(redis: RedisConnection, opts: DispatcherOptions) {
    this.redis = redis;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.knownKeyMaxMs = opts.knownKeyMaxMs ?? 60_000;
    this.known = new GenerationalMap(Math.max(0, opts.knownKeyLimit ?? 100_000));
    this.batchAdd = new BatchAdd(redis);
    // A dropped connection may come back to a Redis that lost data (a restart without
    // persistence, a failover): nothing remembered about it is trusted after that.
    redis.on('close', () => this.forget());
  }

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      // BullMQ checks the server's version with a full INFO per queue object. One check per
      // connection is enough: a storm of 10,000 new nodes sent 10,000 INFOs, each costlier the
      // more clients Redis has (bench/fleet.ts: 3.7 ms of Redis per job at 9,800 agents).
      q = new Queue(name, {
        connection: this.redis,
        prefix: this.opts.prefix,
        skipVersionCheck: this.queues.size > 0,
        streams: { events: { maxLen: QUEUE_EVENTS_KEPT } },
      });
      // Errors surface through the add() promise; this only keeps a dropped connection from
      // becoming an unhandled 'error' event.
      q.on('error', () => {});
      this.queues.set(name, q);
      // BullMQ keeps a queue whose start failed (the connection ended before it was ready)
      // failing for good: forget it, so the next use makes a new one on the revived connection.
      const made = q;
      made.client.catch(() => {
        if (this.queues.get(name) !== made) return;
        this.queues.delete(name);
        this.ready.delete(name);
        made.close().catch(() => {});
      });
    }
    return q;
  }

  /** Drops every known key (e.g. the operator removed jobs, tests flushed Redis). */
  forget(): void {
    this.known.clear();
    this.recordedQueues.clear();
  }

  async enqueue(jobs: readonly RemediationJob[]): Promise<Enqueued[]> {
    if (jobs.length === 0) return [];
    // Every job already known: the answer needs no Redis and no timer.
    const queueNames = jobs.map(queueFor);
    const fromMemory = jobs.map((j, i) => this.knownAnswer(j, queueNames[i]!));
    if (fromMemory.every((e) => e !== undefined)) return fromMemory as Enqueued[];
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`storing jobs took longer than ${this.opts.timeoutMs} ms`)), this.opts.timeoutMs);
    });
    try {
      return await Promise.race([Promise.all(jobs.map((j, i) => fromMemory[i] ?? this.enqueueCoalesced(j, queueNames[i]!))), deadline]);
    } catch (err) {
      if (err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError(`storing jobs failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private knownAnswer(job: RemediationJob, queueName: string): Enqueued | undefined {
    return this.isKnown(queueName, job.key) ? answer(job, queueName, true) : undefined;
  }

  /**
   * Whether every one of these jobs would be answered "deduplicated" from memory right now
   * (the same rule and bounds as enqueue's). For answers kept by the caller (repeat bodies).
   */
  allKnown(jobs: readonly { queue: string; key: string }[]): boolean {
    for (const j of jobs) if (!this.isKnown(j.queue, j.key)) return false;
    return jobs.length > 0;
  }

  private isKnown(queueName: string, key: string): boolean {
    if (this.known.size === 0) return false;
    const k = this.known.get(key);
    if (k === undefined || k.queue !== queueName) return false;
    if (this.now() >= k.until) {
      this.known.delete(key);
      return false;
    }
    return true;
  }

  /**
   * A storm of the same alert arrives concurrently: the first request stores the job, the others
   * wait for it and answer "deduplicated" without their own round trip. Only success is shared;
   * if the first fails, each waiter reports the failure (and the sender retries).
   */
  private async enqueueCoalesced(job: RemediationJob, queueName: string): Promise<Enqueued> {
    const pending = this.inFlight.get(job.key);
    if (pending) return { ...(await pending), deduplicated: true };
    const p = new Promise<Enqueued>((resolve, reject) => {
      this.pending.push({ job, queueName, deadline: this.now() + this.opts.timeoutMs, resolve, reject });
      this.schedule();
    });
    this.inFlight.set(job.key, p);
    try {
      return await p;
    } finally {
      this.inFlight.delete(job.key);
    }
  }

  /**
   * Sends after the poll phase, so every request whose body was read in this turn shares the
   * script call. While MAX_IN_FLIGHT calls are on their way, new jobs wait for one to answer and
   * then all go in the next one (batches grow with load, writes and per-call costs do not); slow
   * calls hold them at most STALL_MS before one more is sent alongside.
   */
  private schedule(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.sending >= MAX_IN_FLIGHT) {
        this.stallTimer ??= setTimeout(() => {
          this.stallTimer = undefined;
          this.flush();
        }, STALL_MS);
        return;
      }
      this.flush();
    });
  }

  private flush(): void {
    if (this.stallTimer) {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
    }
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.sending++;
    let sent: Promise<void>;
    try {
      sent = this.send(batch);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent
      .catch((err: unknown) => {
        for (const b of batch) b.reject(err);
      })
      .finally(() => {
        this.sending--;
        this.flush();
      });
  }

  private async send(batch: Pending[]): Promise<void> {
    // BullMQ defines its scripts on the connection when a queue first initialises: wait for each
    // new queue of the batch (all our queues share one connection).
    for (const name of new Set(batch.map((b) => b.queueName))) if (!this.ready.has(name)) await this.queue(name).client;
    for (const b of batch) this.ready.add(b.queueName);
    // A new queue waits for Redis to be ready: when that outlived the request's deadline, the
    // sender got 503 and will retry; storing the job now, behind that answer, is not wanted.
    const now = this.now();
    const late = batch.filter((b) => b.deadline <= now);
    for (const b of late) b.reject(new StoreUnavailableError('Redis was not ready before the deadline'));
    if (late.length > 0) batch = batch.filter((b) => b.deadline > now);
    if (batch.length === 0) return;
    const newQueues = new Set<string>();
    if (this.opts.recordsQueues !== false) for (const b of batch) if (!this.recordedQueues.has(b.queueName)) newQueues.add(b.queueName);
    if (newQueues.size > 0 && this.opts.prepareQueues) await this.opts.prepareQueues([...newQueues]);
    const recorded = newQueues.size > 0 ? this.redis.sadd(knownQueuesKey(this.opts.prefix), ...newQueues) : undefined;
    // No later than the timestamp BullMQ gives each job below (same clock in production).
    const sentAt = this.now();
    const index = this.opts.index;
    const inScript = index !== undefined && !this.redis.isCluster;
    const items = batch.map((b): BatchItem => {
      const queue = this.queue(b.queueName);
      const sealer = this.opts.sealer;
      // The job encoded once, for its seal and as the text stored (captureAdd puts it in place of BullMQ's encoding).
      const text = sealer ? sealedJobText(sealer, b.queueName, b.job, this.opts.sealTtlMs ?? DEFAULT_SEAL_TTL_MS) : JSON.stringify(b.job);
      const job = new Job(queue, b.job.runbook, DATA_PLACEHOLDER, jobOptions(b.job), b.job.key);
      // The job's timestamp is read right before its add, in the same script call: exact within
      // one receiver (concurrent repeats are coalesced above); across receiver replicas two
      // racing first deliveries run one after the other in Redis, so the second sees the first.
      const item: BatchItem = { jobKey: queue.toKey(b.job.key), call: captureAdd(job, text) };
      if (inScript) item.member = index.member(answer(b.job, b.queueName, false));
      return item;
    });
    const onIndexError = (err: Error): void => this.opts.onIndexError?.(err);
    const batchIndex: BatchIndex | undefined = inScript ? { key: index.key, keep: index.keep, at: sentAt, onError: onIndexError } : undefined;
    const [replies] = await Promise.all([this.batchAdd.add(items, batchIndex), recorded]);
    if (recorded) for (const q of newQueues) this.recordedQueues.add(q);
    await this.replaceExpired(batch, items, replies, batchIndex);
    const stored: Enqueued[] = [];
    const done: { b: Pending; a: Enqueued; storedAt: number }[] = [];
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
      const a = answer(b.job, b.queueName, r.existingTimestamp !== null);
      if (!a.deduplicated) stored.push(a);
      done.push({ b, a, storedAt: r.existingTimestamp !== null ? Number(r.existingTimestamp) : sentAt });
    }
    // In Redis now (on the primary), whatever the answer below.
    if (stored.length > 0) {
      if (index && !inScript) index.record(stored, sentAt).catch((err: unknown) => onIndexError(err instanceof Error ? err : new Error(String(err))));
      this.opts.onStored?.(stored);
    }
    const settle = (): void => {
      for (const { b, a, storedAt } of done) {
        this.remember(b.queueName, b.job.key, storedAt);
        b.resolve(a);
      }
    };
    const ack = this.opts.replicaAck;
    if (!ack || done.length === 0) return settle();
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
  private async replaceExpired(batch: readonly Pending[], items: readonly BatchItem[], replies: BatchReply[], index: BatchIndex | undefined): Promise<void> {
    const now = this.now();
    const old = batch.flatMap((b, i) => {
      const r = replies[i]!;
      return 'error' in r || r.existingTimestamp === null || Number(r.existingTimestamp) > now - this.windowMs(b.queueName) ? [] : [i];
    });
    if (old.length === 0) return;
    const expired: number[] = [];
    await Promise.all(
      old.map(async (i) => {
        const b = batch[i]!;
        const job = await Job.fromId(this.queue(b.queueName), b.job.key);
        if (!job?.finishedOn || job.finishedOn > now - this.windowMs(b.queueName)) return;
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
    const again = await this.batchAdd.add(
      expired.map((i) => items[i]!),
      index,
    );
    expired.forEach((i, j) => {
      replies[i] = again[j]!;
    });
  }

  /** The dedup window of the jobs on this queue: what its worker keeps them for (catalogue/policy.ts). */
  private windowMs(queueName: string): number {
    const placement = placementOfQueue(queueName);
    return this.opts.dedupWindowMs?.[placement] ?? queueWindowMs(placement);
  }

  /**
   * Until when a job stored at `storedAt` is certainly still in Redis, as far as retention goes.
   * BullMQ removes finished jobs by age, counted from their finishedOn (>= the time they were
   * stored); the worker finishing a job sweeps its WHOLE queue's completed/failed set with the
   * queue's window (`queueWindowMs`, the same DEDUP_WINDOW_SECONDS: one ConfigMap for every
   * component). A margin covers the clocks of the receivers and workers involved.
   *
   * What this cannot see, and why the answer from memory is further capped by knownKeyMaxMs:
   * someone deleting the job (Job.remove, Queue.clean/drain/obliterate, the operator
   * dashboard), FLUSHDB, and Redis losing data without this connection dropping (a dropped
   * connection forgets everything). Those are deliberate or catastrophic; the cap bounds how
   * long a repeat is folded into a job that is no longer there.
   */
  private rememberUntil(queueName: string, storedAt: number): number {
    return Math.min(storedAt + this.windowMs(queueName) - CLOCK_SKEW_MARGIN_MS, this.now() + this.knownKeyMaxMs);
  }

  private remember(queueName: string, key: string, storedAt: number): void {
    if (this.knownKeyMaxMs <= 0 || !Number.isFinite(storedAt)) return;
    const until = this.rememberUntil(queueName, storedAt);
    if (until <= this.now()) return;
    this.known.set(key, { queue: queueName, until });
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}

/**
 * BullMQ options of a job: its key as id (a repeat folds into it) and the runbook's retries.
 * How long it is kept once finished (its deduplication window) is not the job's to say: the
 * worker that finishes it keeps every finished job of its queue for the queue's window
 * (catalogue/policy.ts `keepFinished`, workers/engine/runbook-worker.ts), which is what makes
 * the window hold.
 */
export function jobOptions(job: RemediationJob) {
  const policy = RUNBOOK_POLICY[job.runbook];
  return {
    jobId: job.key,
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs, jitter: policy.jitter },
  } satisfies JobsOptions;
}

interface Known {
  queue: string;
  until: number;
}

function answer(job: RemediationJob, queueName: string, deduplicated: boolean): Enqueued {
  const node = 'node' in job.target ? job.target.node : undefined;
  return { id: job.key, queue: queueName, runbook: job.runbook, ...(node ? { node } : {}), key: job.key, deduplicated };
}
