import { JOB_ID } from '../../core/catalogue/idempotency-keys.ts';
import { RemediationJob, jobNode } from '../../core/catalogue/jobs.ts';
import { nodeOfQueue, queueFor } from '../../core/catalogue/queues.ts';
import type { IncidentIndex } from '../../adapters/jobstore/incident-index.ts';
import type { FoundJob, JobStore } from '../../core/jobs/job-store.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import type { Sealer } from '../../core/trust/seal.ts';
import { SEAL_FIELD, issuerMayNot, sealJob, verifyJobProvenance } from '../../core/trust/work.ts';
import type { Asked } from '../../adapters/controls/audit-trail.ts';
import type { ControlsStore } from '../../adapters/controls/controls-store.ts';
import type { Role } from '../../core/trust/roles.ts';

// An operator's retry of a failed job. Not BullMQ's job.retry(): that would put the
// old sealed data back on the queue, which the agent rightly refuses as a replay of finished work
// (workers/engine/seen-work.ts), and a retry through Redis alone is what the seals exist to stop.
// Instead the receiver issues a NEW job for the same work, sealed afresh with its own key:
// - only for data it can trace to an issuer: the old seal must verify (its age aside), so a
//   retry never launders data someone wrote into Redis into sealed work;
// - only for work the receiver may issue (an `rbd-unmap` is the cluster worker's: retry the
//   rbd-stale-mapping job that asked for it), and that the receiver issued in the first place:
//   what a node's agent or the cluster worker sealed stays theirs (notReissued below);
// - its key is `<first key>.r<n>` and it carries `retry: { of, n }`, so the agent keeps the host
//   journal under the first key: a step that took effect in an earlier job of the line is not
//   done twice, while every other check (seal, node, mode, pause, approval, evidence) runs as
//   for any job. Approvals are per job: a retried high-risk step is approved again.
// The failed job stays as it was (its page links to the retry); both are in the audit trail.

/**
 * Why work another component issued is not sealed again as the receiver's, or undefined. A retry
 * makes the receiver the issuer: work sealed by a node's agent (its own check, or anything it
 * sealed into its own queue) or by the cluster worker would become work the receiver vouches
 * for, beyond what its real issuer may ask (src/core/trust/work.ts issuerMayNot). Not even work
 * that issuer may ask for: it is that issuer's decision, made from what it saw, and it issues
 * it again when it still sees it.
 */
function notReissued(issuer: Role, job: RemediationJob, queue: string): string | undefined {
  const who = issuer === 'node-agent' ? `the agent of node ${nodeOfQueue(queue) ?? '?'}` : `the ${issuer}`;
  const never = issuerMayNot(issuer, job);
  if (never) return `it was sealed by ${who}, which may not issue it (${never}): it was never valid work, and is not made the receiver's now`;
  if (issuer === 'receiver') return undefined;
  return `${who} issued it (its own check), not the receiver: a retry is sealed as the receiver's work, which would vouch for what only ${who} decided; ${who} issues it again while it still finds the work, or start from a new signal`;
}

export interface JobRetryOptions {
  jobs: JobStore;
  /** Queues a failed job was recorded under, looked at first (JobStore.find). */
  likely?: (id: string) => Promise<readonly (string | undefined)[]>;
  store: ControlsStore;
  /** The receiver's trust: its sealer, the keys it verifies old seals with, the seal TTL. */
  trust: { ring: Keyring; sealer?: Sealer; ttlMs: number; allowUnsigned: boolean };
  /** The console's index: the new job shows at the top of the incidents. */
  index?: IncidentIndex;
  now?: () => number;
}

export type RetryResult =
  | { ok: true; id: string; queue: string; of: string; retry: { of: string; n: number } }
  | { ok: false; status: 404 | 409 | 422; error: string };

/** Retries in one line of work: `.r1` .. `.r99`. */
const MAX_RETRIES = 99;

export class JobRetry {
  readonly #o: JobRetryOptions;
  readonly #now: () => number;

  constructor(o: JobRetryOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  async retry(id: string, asked: Asked): Promise<RetryResult> {
    const found = await this.#find(id);
    if (!found) return { ok: false, status: 404, error: `no job ${id}` };
    const { queue, job, state } = found;
    if (state !== 'failed') return { ok: false, status: 409, error: `job ${id} is ${state}: only a failed job can be retried` };
    const parsed = RemediationJob.safeParse(job.data);
    if (!parsed.success) return { ok: false, status: 422, error: `job ${id} does not match the job catalogue: it is never sealed again` };
    const old = parsed.data;
    const provenance = this.#provenance(queue, id, job.data);
    if (provenance.why) return { ok: false, status: 422, error: `job ${id} is not retried: ${provenance.why}` };
    const issuer = this.#o.trust.sealer?.role ?? 'receiver';
    const notOurs = issuerMayNot(issuer, old);
    if (notOurs) {
      const parent = old.runbook === 'rbd-unmap' && old.parent ? `; retry the job that asked for it (${old.parent})` : '';
      return { ok: false, status: 422, error: `job ${id} is not retried: ${notOurs}${parent}` };
    }
    const otherIssuer = provenance.issuer && provenance.issuer !== issuer ? notReissued(provenance.issuer, old, queue) : undefined;
    if (otherIssuer) return { ok: false, status: 422, error: `job ${id} is not retried: ${otherIssuer}` };
    const of = old.retry?.of ?? old.key;
    const n = (old.retry?.n ?? 0) + 1;
    const key = `${of}.r${n}`;
    if (n > MAX_RETRIES || !JOB_ID.test(key)) return { ok: false, status: 422, error: `job ${id} has been retried ${n - 1} times: start from a new signal` };
    const evidence = [
      ...old.evidence,
      {
        source: 'api' as const,
        summary: `retry of ${id} asked by ${asked.by}${asked.why ? `: ${asked.why}` : ''}`.slice(0, 500),
        raw: { retryOf: id, by: asked.by, why: asked.why ?? '' },
      },
    ].slice(-20);
    // Not counted towards the storm breaker when stored here: its agent counts its start.
    const { stormCounted: _counted, ...work } = old;
    const next = RemediationJob.parse({ ...work, key, evidence, retry: { of, n } });
    const queueName = queueFor(next);
    if (queueName !== queue) return { ok: false, status: 422, error: `job ${id} is on ${queue}, its work belongs on ${queueName}: not retried` };
    const existing = await this.#o.jobs.state(queueName, key);
    if (existing !== 'unknown')
      return {
        ok: false,
        status: 409,
        error: `job ${id} was already retried as ${key} (${existing})${existing === 'failed' ? `: retry ${key}` : ''}`,
      };
    const sealer = this.#o.trust.sealer;
    const data = sealer ? sealJob(sealer, queueName, next, this.#o.trust.ttlMs) : next;
    await this.#o.jobs.add(queueName, next, data);
    const node = jobNode(next);
    await Promise.all([
      this.#o.index?.record([{ queue: queueName, id: key, node, runbook: next.runbook }], this.#now()),
      this.#o.store.audit('retry', `job/${id}`, { by: asked.by, why: `${asked.why ?? ''} (as ${key})`.trim() }),
      this.#o.store.audit('retry', `job/${key}`, { by: asked.by, why: `retry of ${id}${asked.why ? `: ${asked.why}` : ''}` }),
    ]);
    return { ok: true, id: key, queue: queueName, of: id, retry: { of, n } };
  }

  /** Why the stored data may not be sealed again (`why`), or who issued it (`issuer`; none: unsigned, allowed). */
  #provenance(queue: string, id: string, data: unknown): { why?: string; issuer?: Role } {
    const t = this.#o.trust;
    const sealed = data !== null && typeof data === 'object' && (data as Record<string, unknown>)[SEAL_FIELD] !== undefined;
    if (!sealed) return t.allowUnsigned ? {} : { why: 'it carries no seal, and ALLOW_UNSIGNED_WORK is off: work nobody issued is not sealed now' };
    const v = verifyJobProvenance(t.ring, queue, id, data);
    return v.ok ? { issuer: v.seal.iss } : { why: `its seal does not hold (${v.reason}: ${v.detail}); only work traced to an issuer is sealed again` };
  }

  #find(id: string): Promise<FoundJob | undefined> {
    return this.#o.jobs.find(id, this.#o.likely);
  }
}
