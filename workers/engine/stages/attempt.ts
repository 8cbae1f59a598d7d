import { queueFinished } from '../../../src/adapters/stats/job-stats.ts';
import type { RemediationJob } from '../../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../../src/core/catalogue/result.ts';
import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import { destructiveEvidenceLine } from '../judge-evidence.ts';
import type { JobEventInput } from '../../../src/adapters/kube/job-events.ts';
import { eventSubject } from '../job-event-sink.ts';
import type { StageDeps } from './deps.ts';

// The record stage, one attempt of one job: its one log line says where and in which mode it
// ran and how it ended, with the job statistics when the job ends (one round trip where the
// store can), and its Kubernetes Events (fire and forget: the recorder never throws, and the API
// server's latency is not the job's).

export class Attempt {
  readonly #d: StageDeps;
  readonly #job: TakenJob;
  readonly #subject: ReturnType<typeof eventSubject> | undefined;
  readonly #started = Date.now();
  readonly runbook: string;
  /** This attempt is the job's last: a failure now ends it. */
  readonly last: boolean;
  #line: string;

  constructor(d: StageDeps, job: TakenJob, parsed: RemediationJob | undefined) {
    this.#d = d;
    this.#job = job;
    this.runbook = parsed ? parsed.runbook : String(job.name);
    this.last = job.attemptsMade + 1 >= job.attempts;
    this.#subject = parsed && d.events ? eventSubject(parsed) : undefined;
    this.#line = `attempt ${job.attemptsMade + 1} on ${d.ranOn}`;
  }

  event(outcome: JobEventInput['outcome'], message: string, mode?: Mode): void {
    if (!this.#subject || !this.#d.events) return;
    void this.#d.events.recordJobEvent({ jobId: this.#job.id, runbook: this.runbook, outcome, regarding: this.#subject, message, ...(mode ? { mode } : {}) });
  }

  /** The run begins: the line says in which mode, and why that one. */
  runs(mode: Mode, modeWhy: string | undefined, attempt: number): void {
    this.#line += ` in ${mode} mode${modeWhy ? ` (${modeWhy})` : ''}`;
    this.event('started', `attempt ${attempt} on ${this.#d.ranOn}`, mode);
  }

  /** The job ends with `outcome`: counted, and its line with the statistics. */
  finish(outcome: string, line: string): Promise<void> {
    this.#d.metrics.finished.inc({ runbook: this.runbook, outcome });
    const durationS = (Date.now() - this.#started) / 1000;
    return this.#job
      .log(`${this.#line}: ${line}`, (batch) => queueFinished(batch, this.#d.stats, this.runbook, outcome, durationS))
      .catch((err: Error) => {
        this.#d.log.warn({ err: err.message }, 'could not record job statistics or the job log');
      });
  }

  /** The attempt failed and the job will be tried again: its line alone. */
  async retries(line: string): Promise<void> {
    await this.#job.log(`${this.#line}: ${line}`).catch(() => {});
  }

  async succeeded(result: RunbookResult): Promise<void> {
    await this.finish(result.outcome, `${result.outcome}: ${result.summary}`);
    const evidence = destructiveEvidenceLine(result.steps);
    this.event('succeeded', `${result.outcome}: ${result.summary}${evidence ? `; ${evidence}` : ''}`, result.mode);
  }
}
