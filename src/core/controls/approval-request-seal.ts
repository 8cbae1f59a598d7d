import type { Keyring } from '../trust/keyring.ts';
import { verifySeal, type Sealer } from '../trust/seal.ts';
import { workRingFor } from '../trust/work-keys.ts';
import { writerOf } from './audit-seal.ts';
import type { ApprovalRecord } from './records.ts';

// An approval request is sealed by the worker that asks (its work key of the job's queue), over
// what it asks: the job, its queue and creation time, and the steps as it words them. The API
// approves or rejects only a request whose seal holds (checked with the receiver's roots), and
// the console offers no buttons for one that does not: an operator never approves wording that
// someone with a Redis password wrote. (The agent also checks, before each step, that the
// decision covers the step as it words it: workers/engine/job-controls.ts.)

/** What the request seal covers: the record as its worker wrote it, without any decision. */
const requestPart = (r: ApprovalRecord) => ({
  jobId: r.jobId,
  queue: r.queue,
  runbook: r.runbook,
  node: r.node ?? null,
  jobCreatedAt: r.jobCreatedAt,
  summary: r.summary,
  steps: r.steps,
  requestedAt: r.requestedAt,
  expiresAt: r.expiresAt,
});

const subject = (r: ApprovalRecord): string => `approval-request/${r.queue}/${r.jobId}`;

/** How long a request's seal is valid past its expiry (a decision may be read back later). */
const AFTER_EXPIRY_MS = 30 * 24 * 3600_000;

/** The request with its worker's seal (`sealer`: the worker's, with the work key of the request's queue). */
export function sealRequest(sealer: Sealer | undefined, r: ApprovalRecord): ApprovalRecord {
  if (!sealer?.workFor) return r;
  const ttl = Math.max(0, Date.parse(r.expiresAt) - Date.now()) + AFTER_EXPIRY_MS;
  return { ...r, requestSeal: sealer.workFor(r.queue).seal('control', subject(r), requestPart(r), ttl) };
}

/** Why the request cannot be trusted as its worker's, or undefined when its seal holds. */
export function requestUnverified(roots: Keyring, r: ApprovalRecord, now = Date.now()): string | undefined {
  if (!r.requestSeal) return "the request carries no seal of the job's worker";
  const v = verifySeal(workRingFor(roots, r.queue), 'control', subject(r), requestPart(r), r.requestSeal, now);
  if (!v.ok) return `the request's seal does not hold (${v.reason}: ${v.detail})`;
  const writer = writerOf(r.queue);
  if (v.seal.iss !== writer) return `the request is sealed by ${v.seal.iss}, not by the ${writer} of its queue`;
  return undefined;
}
