import { posix } from 'node:path';
import { z } from '../../src/core/zod.ts';
import { JOB_ID } from '../../src/core/catalogue/idempotency-keys.ts';
import type { Host } from '../host/host.ts';
import { PermanentError } from '../../src/core/errors.ts';

// Which steps of a job took effect, on the host, keyed by job id. A retried job (same id) skips
// them: a destructive step is never repeated even when its check would now say "not done"
// (after `losetup -d loop101`, someone else may own loop101). A finished journal is ignored once
// the queue's deduplication window has passed since it finished, because idempotency keys repeat:
// a later job for the same PV gets the same id and must start fresh. Within the window the same id
// is the same job (a Redis failover lost its record and a retried webhook stored it again), and
// its steps are skipped. An operator's retry (a new job, src/control/actions/job-retry.ts) opens
// the journal of its line's first job (RunbookContext.journalKey), so it skips what its predecessors took.

const JournalFile = z.object({
  version: z.literal(1),
  jobId: z.string(),
  runbook: z.string(),
  finished: z.boolean(),
  /** When it finished (absent in journals written before it was recorded: those are never reused). */
  finishedAt: z.optional(z.string()),
  done: z.array(z.object({ id: z.string(), at: z.string() })),
});
type JournalFile = z.infer<typeof JournalFile>;

export class Journal {
  readonly #host: Host;
  readonly #path: string;
  readonly #now: () => Date;
  #data: JournalFile;
  /** Whether a file exists for this journal; finishing a journal that never was saved writes nothing. */
  #persisted: boolean;

  private constructor(host: Host, path: string, data: JournalFile, now: () => Date, persisted: boolean) {
    this.#host = host;
    this.#path = path;
    this.#data = data;
    this.#now = now;
    this.#persisted = persisted;
  }

  static pathFor(stateDir: string, jobId: string): string {
    if (!JOB_ID.test(jobId)) throw new PermanentError(`job id ${JSON.stringify(jobId)} cannot name a journal file`);
    return posix.join(stateDir, 'journal', `${jobId}.json`);
  }

  /** `sameJobWithinMs`: a journal finished less than this ago is this job's still (RunbookContext.sameJobWithinMs). */
  static async open(host: Host, stateDir: string, jobId: string, runbook: string, now: () => Date, sameJobWithinMs = 0): Promise<Journal> {
    const path = Journal.pathFor(stateDir, jobId);
    const fresh: JournalFile = { version: 1, jobId, runbook, finished: false, done: [] };
    const text = await host.readFile(path);
    if (text === null) return new Journal(host, path, fresh, now, false);
    const parsed = JournalFile.safeParse(safeJson(text));
    // An unreadable journal is not trusted to skip anything: steps fall back to their checks.
    const finishedAt = parsed.success && parsed.data.finishedAt ? Date.parse(parsed.data.finishedAt) : Number.NaN;
    const sameJob = Number.isFinite(finishedAt) && now().getTime() - finishedAt < sameJobWithinMs;
    const usable = parsed.success && (!parsed.data.finished || sameJob) && parsed.data.runbook === runbook;
    return new Journal(host, path, usable ? parsed.data : fresh, now, true);
  }

  /** Did this exact step take effect in an earlier attempt of this job? */
  has(stepId: string): boolean {
    return this.#data.done.some((d) => d.id === stepId);
  }

  async markDone(stepId: string): Promise<void> {
    if (!this.has(stepId)) this.#data.done.push({ id: stepId, at: this.#now().toISOString() });
    await this.#save();
  }

  /** The job reached a final outcome: a later job with the same id starts fresh. */
  async finish(): Promise<void> {
    if (!this.#persisted || this.#data.finished) return;
    this.#data.finished = true;
    this.#data.finishedAt = this.#now().toISOString();
    await this.#save();
  }

  async #save(): Promise<void> {
    await this.#host.mkdir(posix.dirname(this.#path));
    const tmp = `${this.#path}.tmp`;
    await this.#host.writeFile(tmp, `${JSON.stringify(this.#data, null, 2)}\n`);
    await this.#host.rename(tmp, this.#path);
    this.#persisted = true;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
