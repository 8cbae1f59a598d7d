import { queueFinished } from '../../../src/adapters/stats/job-stats.ts';
import type { RemediationJob } from '../../../src/core/catalogue/jobs.ts';
import type { Mode, RunbookResult } from '../../../src/core/catalogue/result.ts';
import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import { destructiveEvidenceLine } from '../judge-evidence.ts';
import type { JobEventInput } from '../../../src/adapters/kube/job-events.ts';
import type { Parking, PlanView } from '../gate.ts';
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
  readonly #parsed: RemediationJob | undefined;
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
    this.#parsed = parsed;
    this.#line = `attempt ${job.attemptsMade + 1} on ${d.ranOn}`;
  }

  /** An Event on the job's subject (and its claim); `message` must hold for every repeat (job-events.ts). */
  event(outcome: JobEventInput['outcome'], message: string, mode?: Mode, variant?: string): void {
    if (!this.#subject || !this.#d.events) return;
    void this.#d.events.recordJobEvent(
      { jobId: this.#job.id, runbook: this.runbook, outcome, regarding: this.#subject, message, ...(mode ? { mode } : {}), ...(variant ? { variant } : {}) },
      this.#parsed,
    );
  }

  /** The run begins: the line says in which mode, and why that one; a retry adds to the Event's series. */
  runs(mode: Mode, modeWhy: string | undefined, attempt: number): void {
    this.#line += ` in ${mode} mode${modeWhy ? ` (${modeWhy})` : ''}`;
    this.event('started', attempt > 1 ? `started again on ${this.#d.ranOn}` : `started on ${this.#d.ranOn}`, mode);
  }

  /**
   * The job is about to park: an Event when it parks for a reason it was not parked for just
   * before (its progress says), not on each recheck of the same wait. An approval names the steps
   * and how to approve; any other wait says why.
   */
  parked(parking: Parking, plan: PlanView | undefined): void {
    const before = (this.#job.progress as { parked?: { reason?: unknown; why?: unknown } } | null | undefined)?.parked;
    if (before?.reason === parking.reason && (parking.reason !== 'approval' || before.why === parking.why)) return;
    if (parking.reason === 'approval') {
      const steps = plan?.steps.filter((s) => s.risk === 'high' || s.destructive).map((s) => s.id) ?? [];
      const which = steps.length > 0 ? ` of ${steps.join(', ')}` : '';
      this.event(
        'awaiting-approval',
        `waiting for an operator's approval${which}: volume-medic approve ${this.#job.id} (or the console), or reject`,
        'enforce',
        parking.why,
      );
      return;
    }
    this.event('parked', `parked (${parking.reason}): ${parking.why}`, undefined, `${parking.reason}|${parking.why}`);
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
    if (result.outcome === 'planned') {
      const steps = result.steps.map((s) => s.id);
      this.event(
        'planned',
        `dry-run: enforce would take ${steps.length} step(s)${steps.length > 0 ? `: ${steps.join(', ')}` : ''}; ${result.summary}`,
        result.mode,
      );
      return;
    }
    const evidence = destructiveEvidenceLine(result.steps);
    this.event('succeeded', `${result.outcome}: ${result.summary}${evidence ? `; ${evidence}` : ''}`, result.mode);
  }
}
