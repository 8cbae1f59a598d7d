import type { RemediationJob, RunbookName } from '../catalogue/jobs.ts';

// The job store: where remediation jobs wait, run, park and finish. Both planes speak to it
// through this port and know jobs and their states, never the queue library nor its connections:
// src/adapters/jobstore/ is its one implementation (BullMQ on Redis: single, Sentinel, Cluster;
// an agent's store, agent-store.ts, opens and closes its own connections), test/testkit/memory-job-store.ts
// its fake; test/int/adapters/jobstore/job-store-contract.int.test.ts holds both to the same behaviour.

/** Every state a stored job can be in, in the order the console shows them: the one list (the counts and filters pick from it). */
export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'paused', 'completed', 'failed', 'waiting-children'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** A stored job as readers see it: plain data, nothing of the store. */
export interface StoredJob {
  id: string;
  /** The runbook it was stored for (the store's job name). */
  name: string;
  data: unknown;
  /** When it was stored (epoch ms). */
  timestamp: number;
  /** When an attempt last started (epoch ms). */
  processedOn?: number;
  finishedOn?: number;
  attemptsMade: number;
  /** Attempts started, stalled ones included. */
  attemptsStarted: number;
  /** Attempts it may take in all. */
  attempts: number;
  progress: unknown;
  returnvalue?: unknown;
  failedReason?: string;
}

export interface FoundJob {
  queue: string;
  job: StoredJob;
  state: JobState;
}

export interface JobRef {
  queue: string;
  id: string;
}

/** The read side: the API, the console, a retry. */
export interface JobReads {
  /** The job's state now; `unknown`: never stored, or gone with retention. */
  state(queue: string, id: string): Promise<JobState | 'unknown'>;
  get(queue: string, id: string): Promise<StoredJob | undefined>;
  /**
   * Where job `id` is: on the `likely` queues first (where something recorded it), then on every
   * known queue. The state is read before the job, so a finished job always carries its result.
   */
  find(id: string, likely?: (id: string) => Promise<readonly (string | undefined)[]>): Promise<FoundJob | undefined>;
  /** The job's log, oldest first, at most `max` lines, and how many it holds in all. */
  logs(queue: string, id: string, max: number): Promise<{ lines: string[]; count: number }>;
  /** For each job, whether it is in `state` now: one cheap question each (the console's state filter). */
  areIn(state: JobState, jobs: readonly JobRef[]): Promise<boolean[]>;
}

/** The operator's side: a retry stored, a parked job let go. */
export interface JobStore extends JobReads {
  /**
   * Stores `job` on `queue` under its key with its runbook's retries; `data` is what is stored (the
   * job, sealed). A key already stored is left as it was (the caller asks state() first).
   */
  add(queue: string, job: RemediationJob, data: unknown): Promise<void>;
  /** A delayed (parked) job runs now; false when it is not delayed (any more) or gone. */
  promote(queue: string, id: string): Promise<boolean>;
}

/** A job as the store took it: where, under which id, and whether it was there already. */
export interface Enqueued {
  id: string;
  queue: string;
  runbook: RunbookName;
  node?: string;
  key: string;
  deduplicated: boolean;
}

/** Storing failed (Redis down or too slow): the HTTP layer answers 503 so the sender retries. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/**
 * The store's way in for new work: each job sealed and stored on its queue under its idempotency
 * key, in batches; a key stored within its queue's deduplication window is answered as it is.
 */
export interface JobEnqueue {
  enqueue(jobs: readonly RemediationJob[]): Promise<Enqueued[]>;
  /** Whether every one of these keys is known stored and still within its window, asking nobody (a repeat's fast answer). */
  allKnown(jobs: readonly { queue: string; key: string }[]): boolean;
}

/** A job a consumer holds (its lock): what a handler may read and do to it. */
export interface TakenJob extends StoredJob {
  queue: string;
  /** Appends a line to the job's log; `counters`: counts sent in the same round trip where the store can. */
  log(line: string, counters?: (batch: CounterBatch) => void): Promise<void>;
  /** Replaces the job's progress (what a waiting or failed job shows besides its result). */
  setProgress(progress: object): Promise<void>;
  /**
   * Parks the job: delayed until `atMs`, no attempt used. Resolves never: it throws what tells the
   * consumer the job was moved (let it through).
   */
  park(atMs: number): Promise<never>;
}

/** Hash increments a log line can carry (job-stats.ts's counters). */
export interface CounterBatch {
  hincrby(key: string, field: string, by: number): unknown;
}

export type JobHandler = (job: TakenJob) => Promise<unknown>;

/** A queue's consumer: one job at a time, retried by the store as the handler's errors say (core/errors.ts). */
export interface JobConsumer {
  /** Taking jobs: started and not closing. */
  running(): boolean;
  /** Resolves once it is connected and waiting for jobs. */
  ready(): Promise<void>;
  /** Called when a job leaves the consumer finished (completed, or failed for good or for now). */
  onFinished(listener: (id: string, outcome: 'completed' | 'failed') => void): void;
  /** Waits for the running job (the store keeps its lock meanwhile), then stops. */
  close(): Promise<void>;
}

/** A queue to consume: the store knows where it is and holds the connections its consumers use. */
export interface ConsumeOptions {
  queue: string;
  /** A job's lock; also how often stalled jobs (a dead consumer's) are looked for. */
  lockDurationMs: number;
  /** How long finished jobs are kept, in seconds (the queue's deduplication window). */
  keepFinished: { age: number };
}

/** The work side: consumers of queues, on the store's own connections. */
export interface JobConsumers {
  consume(o: ConsumeOptions, handler: JobHandler): JobConsumer;
}

/** What TakenJob.park throws once the job is moved: a handler lets it through, untouched. */
export class JobParked extends Error {
  override name = 'JobParked';
}
