import type { Job } from 'bullmq';
import type { RedisConnection } from '../redis/redis.ts';
import { RemediationJob, jobNode } from '../../core/catalogue/jobs.ts';
import { nodeOfQueue } from '../../core/catalogue/queues.ts';
import type { Dispatcher } from './dispatcher.ts';
import { findJob, type FindJob } from './find-job.ts';

// Read side of the queues for the HTTP API. Everything read back from Redis is parsed again:
// a job that no longer matches the catalogue is shown as such, not trusted.

export interface JobSummary {
  id: string;
  queue: string;
  runbook: string;
  node?: string;
  state: string;
  attemptsMade: number;
  createdAt: string;
  finishedAt?: string;
  failedReason?: string;
  outcome?: string;
}

export interface JobDetail extends JobSummary {
  key: string;
  target: unknown;
  evidence: unknown;
  attemptsStarted: number;
  processedAt?: string;
  result?: unknown;
  progress?: unknown;
  log: string[];
  valid: boolean;
}

const iso = (ms: number | undefined): string | undefined => (ms ? new Date(ms).toISOString() : undefined);

export class JobReader {
  private readonly redis: RedisConnection;
  private readonly prefix: string;
  private readonly dispatcher: Dispatcher;

  /** Queues a job id was recorded under (the console's records, find-job.ts): one lookup instead of one per queue. */
  private readonly likely: FindJob['likely'];

  constructor(redis: RedisConnection, prefix: string, dispatcher: Dispatcher, likely?: FindJob['likely']) {
    this.redis = redis;
    this.prefix = prefix;
    this.dispatcher = dispatcher;
    this.likely = likely;
  }

  async get(id: string): Promise<JobDetail | undefined> {
    const found = await findJob({ redis: this.redis, prefix: this.prefix, queue: (name) => this.dispatcher.queue(name), ...(this.likely ? { likely: this.likely } : {}) }, id);
    if (!found) return undefined;
    const { queue: name, handle: queue, job, state } = found;
    const parsed = RemediationJob.safeParse(job.data);
    const { logs } = await queue.getJobLogs(id, 0, 199);
    const summary = await this.summary(job, name, state);
    return {
      ...summary,
      key: parsed.success ? parsed.data.key : id,
      target: parsed.success ? parsed.data.target : undefined,
      evidence: parsed.success ? parsed.data.evidence : undefined,
      attemptsStarted: job.attemptsStarted,
      ...(iso(job.processedOn) ? { processedAt: iso(job.processedOn) } : {}),
      ...(job.returnvalue !== null && job.returnvalue !== undefined ? { result: job.returnvalue } : {}),
      ...(job.progress !== 0 ? { progress: job.progress } : {}),
      log: logs,
      valid: parsed.success,
    };
  }

  private async summary(job: Job, queue: string, knownState?: string): Promise<JobSummary> {
    const parsed = RemediationJob.safeParse(job.data);
    const node = parsed.success ? jobNode(parsed.data) : nodeOfQueue(queue);
    const rv = job.returnvalue as { outcome?: unknown } | null | undefined;
    const progress = job.progress as { result?: { outcome?: unknown } } | undefined;
    const outcome = typeof rv?.outcome === 'string' ? rv.outcome : typeof progress?.result?.outcome === 'string' ? progress.result.outcome : undefined;
    return {
      id: job.id ?? '',
      queue,
      runbook: parsed.success ? parsed.data.runbook : job.name,
      ...(node ? { node } : {}),
      state: knownState ?? (await job.getState()),
      attemptsMade: job.attemptsMade,
      createdAt: iso(job.timestamp) ?? '',
      ...(iso(job.finishedOn) ? { finishedAt: iso(job.finishedOn) } : {}),
      ...(job.failedReason ? { failedReason: job.failedReason } : {}),
      ...(outcome ? { outcome } : {}),
    };
  }
}
