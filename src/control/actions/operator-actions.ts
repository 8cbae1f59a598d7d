import { requestUnverified } from '../../core/controls/approval-request-seal.ts';
import type { RedisConnection } from '../../adapters/redis/redis.ts';
import type { Mode } from '../../core/catalogue/result.ts';
import { ApprovalStore } from '../../adapters/controls/approval-store.ts';
import { Breakers, type BreakerCaps, type BreakerState } from '../../adapters/controls/breakers.ts';
import type { Asked, AuditRead } from '../../adapters/controls/audit-trail.ts';
import { ControlsStore, type ModeScope, type PauseScope, type Pauses } from '../../adapters/controls/controls-store.ts';
import type { ApprovalRecord, ModeOverride, ParkedJob, ParkReason, TripRecord } from '../../core/controls/records.ts';
import type { ControlTrust } from '../../core/controls/sealed-records.ts';
import type { JobStore } from '../../core/jobs/job-store.ts';

// What an operator can do through the API, in one place (the HTTP routes only parse and answer).
// Every change is recorded in the audit trail with who and why. After a change that can release
// parked jobs (approve, reject, resume, breaker reset) the affected jobs are promoted from
// `delayed` so they look again at once instead of at their next recheck.

export interface OperatorOptions {
  redis: RedisConnection;
  prefix: string;
  /** A queue by name (the receiver's, on its producer connection). */
  jobs: Pick<JobStore, 'promote'>;
  caps: BreakerCaps;
  approvalTtlMs: number;
  configuredModes: { default: Mode; runbooks: Partial<Record<string, Mode>> };
  now?: () => Date;
  /** Seals what the API writes (modes, pauses, decisions) and shows only records whose seal holds. */
  trust?: ControlTrust;
  /**
   * The queue job `id` is on (the receiver: src/adapters/jobstore/bull-job-store.ts, JobStore.find, hinted by the console's
   * index), where its approval record lives. Default: its parked record's queue only.
   */
  locate?: (id: string) => Promise<string | undefined>;
}

export type DecisionResult = { ok: true; approval: ApprovalRecord } | { ok: false; status: 404 | 409; error: string; approval?: ApprovalRecord };

export interface ControlsView {
  modes: {
    configured: OperatorOptions['configuredModes'];
    overrides: { runbooks: Record<string, ModeOverride>; nodes: Record<string, ModeOverride> };
  };
  pauses: Pauses;
  breakers: BreakerState[];
  parked: ParkedJob[];
}

export class OperatorActions {
  readonly store: ControlsStore;
  readonly approvals: ApprovalStore;
  readonly breakers: Breakers;
  readonly #opts: OperatorOptions;
  readonly #now: () => Date;

  constructor(opts: OperatorOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => new Date());
    this.store = new ControlsStore(opts.redis, opts.prefix, this.#now, opts.trust);
    this.approvals = new ApprovalStore(opts.redis, opts.prefix, opts.trust, { legacy: true });
    this.breakers = new Breakers(opts.redis, opts.prefix, this.#now);
  }

  async view(): Promise<ControlsView> {
    const [overrides, pauses, breakers, parked] = await Promise.all([
      this.store.modeOverrides(),
      this.store.pauses(),
      this.breakers.states(this.#opts.caps),
      this.store.parkedJobs(),
    ]);
    return { modes: { configured: this.#opts.configuredModes, overrides }, pauses, breakers, parked };
  }

  breakerStates(): Promise<BreakerState[]> {
    return this.breakers.states(this.#opts.caps);
  }

  audit(limit: number): Promise<AuditRead['entries']> {
    return this.store.auditLog(limit);
  }

  /** The audit entries with their seals checked, and the lists whose numbers do not add up. */
  auditReport(limit: number): Promise<AuditRead> {
    return this.store.auditReport(limit);
  }

  setMode(scope: ModeScope, mode: Mode | null, asked: Asked): Promise<void> {
    return this.store.setMode(scope, mode, asked);
  }

  /** Pauses the cluster (undefined), a node (its name) or a runbook everywhere ({ runbook }). */
  pause(scope: PauseScope, asked: Asked): Promise<boolean> {
    return this.store.pause(scope, asked);
  }

  async resume(scope: PauseScope, asked: Asked): Promise<{ changed: boolean; released: number }> {
    const changed = await this.store.resume(scope, asked);
    // Released jobs look again at once; one still held by another pause parks again.
    const released = changed
      ? await this.#promote(
          'paused',
          (p) => scope === undefined || (typeof scope === 'string' ? p.node === scope || p.node === undefined : p.runbook === scope.runbook),
        )
      : 0;
    return { changed, released };
  }

  async resetBreaker(name: string, asked: Asked): Promise<{ cleared?: TripRecord; released: number }> {
    const cleared = await this.breakers.reset(name);
    await this.store.audit('breaker-reset', `breaker/${name}`, {
      by: asked.by,
      why: `${asked.why ?? ''}${cleared ? ` (was: ${cleared.why})` : ' (was not tripped)'}`,
    });
    return { ...(cleared ? { cleared } : {}), released: await this.#promote('breaker', () => true) };
  }

  /** The queue whose keys hold job `jobId`'s approval record; undefined when it cannot be found. */
  async #queueOf(jobId: string): Promise<string | undefined> {
    const parked = (await this.store.parkedJobs()).find((p) => p.jobId === jobId)?.queue;
    if (parked) return parked;
    return this.#opts.locate?.(jobId).catch(() => undefined);
  }

  /**
   * Why a request is not its worker's (its seal does not hold), or undefined: the API decides and
   * the console offers buttons only for requests that verify. Without the roots (no keys:
   * ALLOW_UNSIGNED_WORK) nothing can be checked and every request is taken.
   */
  requestUnverified(rec: ApprovalRecord): string | undefined {
    const roots = this.#opts.trust?.audit?.roots;
    if (!roots) return undefined;
    const why = requestUnverified(roots, rec, this.#now().getTime());
    return why && this.#opts.trust?.allowUnsigned && !rec.requestSeal ? undefined : why;
  }

  /** `queue`: where the caller already found the job (saves looking for it). */
  async approval(jobId: string, queue?: string): Promise<ApprovalRecord | undefined> {
    return this.approvals.get(queue ?? (await this.#queueOf(jobId)), jobId);
  }

  async pendingApprovals(): Promise<ApprovalRecord[]> {
    const parked = (await this.store.parkedJobs()).filter((p) => p.reason === 'approval');
    const recs = await Promise.all(parked.map((p) => this.approvals.get(p.queue, p.jobId)));
    // Listed under the node of the queue each was found in, whatever the record names (parkedJobs).
    return recs.flatMap((r, i) => (r?.state === 'pending' ? [{ ...r, node: parked[i]!.node ?? r.node }] : []));
  }

  approve(jobId: string, asked: Asked): Promise<DecisionResult> {
    return this.#decide(jobId, 'approved', asked);
  }

  reject(jobId: string, asked: Asked): Promise<DecisionResult> {
    return this.#decide(jobId, 'rejected', asked);
  }

  async #decide(jobId: string, state: 'approved' | 'rejected', asked: Asked): Promise<DecisionResult> {
    // Decided where the job's own worker reads it: under its queue (or, for a request an agent
    // not yet upgraded made, the transition key); never a new record in a shared key.
    const queue = await this.#queueOf(jobId);
    const rec = await this.approvals.get(queue, jobId);
    if (!rec) return { ok: false, status: 404, error: `job ${jobId} has no approval request${queue ? '' : ' (no queue holds the job)'}` };
    if (rec.state !== 'pending')
      return {
        ok: false,
        status: 409,
        error: `the approval request of ${jobId} is already ${rec.state}${rec.decidedBy ? ` (by ${rec.decidedBy})` : ''}`,
        approval: rec,
      };
    const unverified = this.requestUnverified(rec);
    if (unverified)
      return {
        ok: false,
        status: 409,
        error: `the approval request of ${jobId} cannot be decided: ${unverified}; it was not written by the job's worker, nothing was decided`,
        approval: rec,
      };
    const t = this.#now();
    if (Date.parse(rec.expiresAt) < t.getTime()) {
      await this.approvals.transition(queue, 'pending', { ...rec, state: 'expired' });
      return {
        ok: false,
        status: 409,
        error: `the approval request of ${jobId} expired at ${rec.expiresAt}`,
        approval: { ...rec, state: 'expired' },
      };
    }
    const next: ApprovalRecord = {
      ...rec,
      state,
      decidedBy: asked.by,
      decidedAt: t.toISOString(),
      why: asked.why ?? '',
      ...(state === 'approved' ? { validUntil: new Date(t.getTime() + this.#opts.approvalTtlMs).toISOString() } : {}),
    };
    if (!(await this.approvals.transition(queue, 'pending', next))) {
      const now = await this.approvals.get(queue, jobId);
      return {
        ok: false,
        status: 409,
        error: `the approval request of ${jobId} was decided meanwhile (${now?.state ?? 'gone'})`,
        ...(now ? { approval: now } : {}),
      };
    }
    await this.store.audit(state === 'approved' ? 'approve' : 'reject', `job/${jobId}`, asked);
    await this.#promoteJob(queue ?? rec.queue, jobId);
    return { ok: true, approval: next };
  }

  async #promote(reason: ParkReason, which: (p: ParkedJob) => boolean): Promise<number> {
    let n = 0;
    for (const p of await this.store.parkedJobs()) {
      if (p.reason === reason && which(p) && (await this.#promoteJob(p.queue, p.jobId))) n += 1;
    }
    return n;
  }

  /** Moves a parked (delayed) job to waiting now; a job in any other state is left alone (it looks again on its own). */
  #promoteJob(queueName: string, jobId: string): Promise<boolean> {
    return this.#opts.jobs.promote(queueName, jobId);
  }
}
