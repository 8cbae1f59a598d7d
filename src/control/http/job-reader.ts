import { RemediationJob } from '../../core/catalogue/jobs.ts';
import { nodeOfStoredJob } from '../../core/catalogue/queues.ts';
import type { JobStore, StoredJob } from '../../core/jobs/job-store.ts';

// The job store read for the HTTP API. Everything read back from Redis is parsed again:
// a job that no longer matches the catalogue is shown as such, not trusted.

export interface JobSummary {
  id: string;
  queue: string;
  runbook: string;
  /** A node queue's own node, whatever the record says (nodeOfStoredJob). */
  node?: string;
  /** The node the job's record names when that is not its queue's: shown, never believed. */
  recordNames?: string;
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
  readonly #jobs: Pick<JobStore, 'find' | 'logs'>;
  /** Queues a job id was recorded under (the console's records): one lookup instead of one per queue. */
  readonly #likely: ((id: string) => Promise<readonly (string | undefined)[]>) | undefined;

  constructor(jobs: Pick<JobStore, 'find' | 'logs'>, likely?: (id: string) => Promise<readonly (string | undefined)[]>) {
    this.#jobs = jobs;
    this.#likely = likely;
  }

  async get(id: string): Promise<JobDetail | undefined> {
    const found = await this.#jobs.find(id, this.#likely);
    if (!found) return undefined;
    const { queue: name, job, state } = found;
    const parsed = RemediationJob.safeParse(job.data);
    const { lines: logs } = await this.#jobs.logs(name, id, 200);
    const summary = this.summary(job, name, state);
    return {
      ...summary,
      key: parsed.success ? parsed.data.key : id,
      target: parsed.success ? parsed.data.target : undefined,
      evidence: parsed.success ? parsed.data.evidence : undefined,
      attemptsStarted: job.attemptsStarted,
      ...(iso(job.processedOn) ? { processedAt: iso(job.processedOn) } : {}),
      ...(job.returnvalue !== undefined ? { result: job.returnvalue } : {}),
      ...(job.progress !== 0 ? { progress: job.progress } : {}),
      log: logs,
      valid: parsed.success,
    };
  }

  private summary(job: StoredJob, queue: string, state: string): JobSummary {
    const parsed = RemediationJob.safeParse(job.data);
    const { node, recordNames } = nodeOfStoredJob(queue, parsed.success ? parsed.data : undefined);
    const rv = job.returnvalue as { outcome?: unknown } | null | undefined;
    const progress = job.progress as { result?: { outcome?: unknown } } | undefined;
    const outcome = typeof rv?.outcome === 'string' ? rv.outcome : typeof progress?.result?.outcome === 'string' ? progress.result.outcome : undefined;
    return {
      id: job.id,
      queue,
      runbook: parsed.success ? parsed.data.runbook : job.name,
      ...(node ? { node } : {}),
      ...(recordNames ? { recordNames } : {}),
      state,
      attemptsMade: job.attemptsMade,
      createdAt: iso(job.timestamp) ?? '',
      ...(iso(job.finishedOn) ? { finishedAt: iso(job.finishedOn) } : {}),
      ...(job.failedReason ? { failedReason: job.failedReason } : {}),
      ...(outcome ? { outcome } : {}),
    };
  }
}
