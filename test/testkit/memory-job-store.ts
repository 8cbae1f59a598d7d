import type { RemediationJob } from '../../src/core/catalogue/jobs.ts';
import { RUNBOOK_POLICY } from '../../src/core/catalogue/policy.ts';
import { CLUSTER_QUEUE, nodeOfQueue, queueFor } from '../../src/core/catalogue/queues.ts';
import { failureText, shouldRetry } from '../../src/core/errors.ts';
import {
  JobParked,
  type ConsumeOptions,
  type CounterBatch,
  type Enqueued,
  type FoundJob,
  type JobConsumer,
  type JobConsumers,
  type JobEnqueue,
  type JobHandler,
  type JobRef,
  type JobState,
  type JobStore,
  type StoredJob,
  type TakenJob,
} from '../../src/core/jobs/job-store.ts';

// The job store in memory, for tests of what sits above it: the same port, held to the same
// behaviour as the Redis one by test/int/adapters/jobstore/job-store-contract.int.test.ts. One consumer per queue, one
// job at a time; retries wait the runbook's backoff like BullMQ's exponential one (no jitter).
// Nothing is sealed and nothing expires: a key stays deduplicated for as long as it is stored.

interface Entry {
  job: StoredJob;
  state: JobState;
  logs: string[];
  timer?: NodeJS.Timeout;
}

const copy = <T>(v: T): T => structuredClone(v);

export class MemoryJobStore implements JobStore, JobEnqueue, JobConsumers {
  readonly #queues = new Map<string, Map<string, Entry>>();
  readonly #wake = new Map<string, () => void>();
  /** Counters sent with log lines: `key|field` -> sum. */
  readonly counters = new Map<string, number>();
  readonly #now: () => number;

  constructor(o: { now?: () => number } = {}) {
    this.#now = o.now ?? Date.now;
  }

  #queue(name: string): Map<string, Entry> {
    let q = this.#queues.get(name);
    if (!q) this.#queues.set(name, (q = new Map()));
    return q;
  }

  #entry(queue: string, id: string): Entry | undefined {
    return this.#queues.get(queue)?.get(id);
  }

  async state(queue: string, id: string): Promise<JobState | 'unknown'> {
    return this.#entry(queue, id)?.state ?? 'unknown';
  }

  async get(queue: string, id: string): Promise<StoredJob | undefined> {
    const e = this.#entry(queue, id);
    return e ? copy(e.job) : undefined;
  }

  async find(id: string, likely?: (id: string) => Promise<readonly (string | undefined)[]>): Promise<FoundJob | undefined> {
    const hints = likely ? await likely(id).catch(() => []) : [];
    const hinted = hints.filter((q): q is string => q !== undefined && (q === CLUSTER_QUEUE || nodeOfQueue(q) !== undefined));
    for (const name of new Set([...hinted, ...[...this.#queues.keys()].sort()])) {
      const e = this.#entry(name, id);
      if (e) return { queue: name, job: copy(e.job), state: e.state };
    }
    return undefined;
  }

  async logs(queue: string, id: string, max: number): Promise<{ lines: string[]; count: number }> {
    const logs = this.#entry(queue, id)?.logs ?? [];
    return { lines: logs.slice(0, max), count: logs.length };
  }

  async areIn(state: JobState, jobs: readonly JobRef[]): Promise<boolean[]> {
    if (state === 'waiting-children') throw new Error(`the job store cannot list jobs in state ${state}`);
    return jobs.map((j) => this.#entry(j.queue, j.id)?.state === state);
  }

  async add(queue: string, job: RemediationJob, data: unknown): Promise<void> {
    const q = this.#queue(queue);
    if (q.has(job.key)) return;
    q.set(job.key, {
      job: {
        id: job.key,
        name: job.runbook,
        data: copy(data),
        timestamp: this.#now(),
        attemptsMade: 0,
        attemptsStarted: 0,
        attempts: RUNBOOK_POLICY[job.runbook].attempts,
        progress: 0,
      },
      state: 'waiting',
      logs: [],
    });
    this.#wake.get(queue)?.();
  }

  /** Each job on its queue under its key, stored as it is; one already stored is answered as deduplicated. */
  async enqueue(jobs: readonly RemediationJob[]): Promise<Enqueued[]> {
    const answers: Enqueued[] = [];
    for (const job of jobs) {
      const queue = queueFor(job);
      const deduplicated = this.#entry(queue, job.key) !== undefined;
      if (!deduplicated) await this.add(queue, job, job);
      const node = 'node' in job.target ? job.target.node : undefined;
      answers.push({ id: job.key, queue, runbook: job.runbook, ...(node ? { node } : {}), key: job.key, deduplicated });
    }
    return answers;
  }

  allKnown(jobs: readonly { queue: string; key: string }[]): boolean {
    return jobs.length > 0 && jobs.every((j) => this.#entry(j.queue, j.key) !== undefined);
  }

  async promote(queue: string, id: string): Promise<boolean> {
    const e = this.#entry(queue, id);
    if (e?.state !== 'delayed') return false;
    this.#ready(queue, e);
    return true;
  }

  #ready(queue: string, e: Entry): void {
    clearTimeout(e.timer);
    delete e.timer;
    e.state = 'waiting';
    this.#wake.get(queue)?.();
  }

  #delay(queue: string, e: Entry, atMs: number): void {
    e.state = 'delayed';
    e.timer = setTimeout(() => this.#ready(queue, e), Math.max(0, atMs - this.#now()));
  }

  /** The queue's consumer (one per queue; locks and retention are BullMQ's, not kept here). */
  consume({ queue }: ConsumeOptions, handler: JobHandler): JobConsumer {
    const listeners: ((id: string, outcome: 'completed' | 'failed') => void)[] = [];
    let running = true;
    let busy: Promise<void> = Promise.resolve();
    const next = (): Entry | undefined => [...this.#queue(queue).values()].find((e) => e.state === 'waiting');
    const runOne = async (e: Entry): Promise<void> => {
      e.state = 'active';
      e.job.attemptsStarted += 1;
      e.job.processedOn = this.#now();
      const taken: TakenJob = {
        ...copy(e.job),
        queue,
        log: async (line, counters) => {
          e.logs.push(line);
          counters?.({
            hincrby: (key, field, by) => this.counters.set(`${key}|${field}`, (this.counters.get(`${key}|${field}`) ?? 0) + by),
          } satisfies CounterBatch);
        },
        setProgress: async (progress) => {
          e.job.progress = copy(progress);
        },
        park: async (atMs) => {
          this.#delay(queue, e, atMs);
          throw new JobParked();
        },
      };
      try {
        const result = await handler(taken);
        e.state = 'completed';
        e.job.returnvalue = copy(result);
        e.job.finishedOn = this.#now();
        e.job.attemptsMade += 1;
        for (const l of listeners) l(e.job.id, 'completed');
      } catch (err) {
        if (err instanceof JobParked) return;
        e.job.attemptsMade += 1;
        e.job.failedReason = failureText(err);
        if (shouldRetry(err) && e.job.attemptsMade < e.job.attempts) {
          const policy = RUNBOOK_POLICY[e.job.name as RemediationJob['runbook']];
          this.#delay(queue, e, this.#now() + (policy?.backoffMs ?? 1000) * 2 ** (e.job.attemptsMade - 1));
        } else {
          e.state = 'failed';
          e.job.finishedOn = this.#now();
        }
        for (const l of listeners) l(e.job.id, 'failed');
      }
    };
    const drain = (): void => {
      busy = busy.then(async () => {
        for (let e = next(); running && e; e = next()) await runOne(e);
      });
    };
    this.#wake.set(queue, drain);
    drain();
    return {
      running: () => running,
      ready: async () => {},
      onFinished: (l) => {
        listeners.push(l);
      },
      close: async () => {
        running = false;
        this.#wake.delete(queue);
        await busy;
      },
    };
  }

  /** Stops every retry and parking timer. */
  close(): void {
    for (const q of this.#queues.values()) for (const e of q.values()) clearTimeout(e.timer);
  }
}
