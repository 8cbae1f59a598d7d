import { recordFinished, recordUntrusted } from '../../../src/adapters/stats/job-stats.ts';
import type { RemediationJob } from '../../../src/core/catalogue/jobs.ts';
import type { ControlTrust } from '../../../src/core/controls/sealed-records.ts';
import { FinalError } from '../../../src/core/errors.ts';
import type { TakenJob } from '../../../src/core/jobs/job-store.ts';
import type { Seal, Untrusted } from '../../../src/core/trust/seal.ts';
import { issuerMayNot, verifyJobSeal } from '../../../src/core/trust/work.ts';
import type { StageDeps, WorkTrust } from './deps.ts';

// Stage 1, before anything else (even the job's own Events: untrusted data names no object we
// write about): is this work sealed by an issuer allowed to ask for it, for this queue and job,
// in time, and not a replay of finished work?

export type TrustCheck = { seal?: Seal; refused?: undefined } | { refused: { reason: Untrusted; detail: string } };

export function verifyTrust(d: StageDeps, job: TakenJob, parsedJob: RemediationJob | undefined): TrustCheck {
  const t = d.trust;
  if (!t) return {};
  const v = verifyJobSeal(t.ring, d.queue, job.id, job.data, (t.now ?? Date.now)());
  if (!v.ok && v.reason === 'unknown-key') t.onUnknownKey?.();
  if (!v.ok) return v.reason === 'unsigned' && t.allowUnsigned ? {} : { refused: { reason: v.reason, detail: v.detail } };
  const notAllowed = parsedJob ? issuerMayNot(v.seal.iss, parsedJob) : undefined;
  if (notAllowed) return { refused: { reason: 'wrong-issuer', detail: `sealed by ${v.seal.iss}.${v.seal.kid}: ${notAllowed}` } };
  if (t.seen.finished(v.seal.mac))
    return {
      refused: {
        reason: 'replayed',
        // Also what a job handed back after its lock lapsed looks like (finished, the finish not
        // recorded: a worker overloaded past its lock): the same seal and job id, nothing to tell apart.
        detail: `this sealed job (issued by ${v.seal.iss} at ${new Date(v.seal.iat).toISOString()}) already finished here and is back on the queue: put back by someone, or handed back after this agent's lock on it lapsed before its finish was recorded`,
      },
    };
  return { seal: v.seal };
}

/**
 * Untrusted work fails at once without running anything: logged on the job, counted
 * (volume_medic_untrusted_refused_total), in the audit trail, and an Event on the agent's node.
 */
export async function refuseUntrusted(d: StageDeps, job: TakenJob, claimed: string, r: { reason: Untrusted; detail: string }): Promise<never> {
  const why = `untrusted work refused (${r.reason}): ${r.detail}; nothing was run`;
  d.log.error({ jobId: job.id, queue: d.queue, claimedRunbook: claimed, reason: r.reason, detail: r.detail }, 'untrusted work refused');
  d.metrics.untrusted.inc({ kind: 'job', reason: r.reason });
  d.metrics.finished.inc({ runbook: claimed, outcome: 'untrusted' });
  await Promise.all([
    job.log(why).catch(() => {}),
    recordUntrusted(d.connection, d.stats, 'job', r.reason).catch(() => {}),
    recordFinished(d.connection, d.stats, claimed, 'untrusted', 0).catch(() => {}),
    d.controls
      ?.audit('work-refused', `job/${String(job.id).slice(0, 200)}`, `${r.reason}: ${r.detail}; queue ${d.queue}; claimed runbook ${claimed}`)
      .catch(() => {}),
  ]);
  if (d.node && d.events)
    void d.events.recordJobEvent({
      jobId: String(job.id ?? '').slice(0, 200),
      runbook: 'untrusted',
      outcome: 'refused',
      regarding: { kind: 'Node', name: d.node },
      message: why.slice(0, 900),
    });
  throw new FinalError(why);
}

/**
 * How the worker's controls are trusted: a mode, pause or approval without the API's valid seal
 * is ignored (the newest record accepted before stands, sealed-records.ts) and reported: logged,
 * counted, and in the audit trail, at most once per record and reason every 10 minutes.
 * `d.controls` is read when a record is refused (the controls are made with this trust).
 */
export function controlTrust(t: WorkTrust, d: Omit<StageDeps, 'controls'> & { readonly controls?: StageDeps['controls'] }): ControlTrust {
  const told = new Map<string, number>();
  return {
    ring: t.controlRing ?? t.ring,
    allowUnsigned: t.allowUnsigned,
    ...(t.now ? { now: t.now } : {}),
    ...(t.controls ? { memory: t.controls } : {}),
    ...(t.auditSealer ? { audit: { sealer: t.auditSealer } } : {}),
    onUntrusted: (u) => {
      const key = `${u.kind}/${u.field}/${u.reason}`;
      const at = Date.now();
      if ((told.get(key) ?? 0) > at - 600_000) return;
      told.set(key, at);
      d.log.error({ kind: u.kind, field: u.field.slice(0, 200), reason: u.reason, detail: u.detail }, 'untrusted control record ignored');
      d.metrics.untrusted.inc({ kind: u.kind, reason: u.reason });
      void recordUntrusted(d.connection, d.stats, u.kind, u.reason).catch(() => {});
      void d.controls?.audit('control-refused', `${u.kind}/${u.field.slice(0, 200)}`, `${u.reason}: ${u.detail}`).catch(() => {});
    },
  };
}
