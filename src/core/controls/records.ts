import { z } from '../zod.ts';
import { Seal } from '../trust/seal.ts';
import { Mode } from '../catalogue/result.ts';

// The records the controls keep in Redis, parsed when read back (Redis is a boundary).
// `by` is who asked: the operator's verified user name (TokenReview or a trusted auth proxy,
// src/control/auth/), never what a request said; `why` is free text; both are recorded with the time.
// Kubernetes user names run long (system:serviceaccount:<namespace>:<name>, OIDC issuers).

const Who = z.string().check(z.trim(), z.minLength(1), z.maxLength(512));
const Why = z.string().check(z.trim(), z.maxLength(500));

const Decision = z.object({ by: Who, why: z._default(Why, ''), at: z.string() });

export const ModeOverride = z.lazy(() => z.extend(Decision, { mode: Mode }));
export type ModeOverride = z.infer<typeof ModeOverride>;

export const PauseRecord = Decision;
export type PauseRecord = z.infer<typeof PauseRecord>;

/**
 * `evidence`: a claim a destructive step relies on must hold longer first (workers/engine/judge-evidence.ts).
 * `coordination`: another tool is acting on the node (kured's reboot lock, a drain, a medik8s
 * remediation), or whether one is cannot be told (src/core/coordination/).
 */
export const ParkReason = z.enum(['paused', 'approval', 'breaker', 'evidence', 'coordination']);
export type ParkReason = z.infer<typeof ParkReason>;

export const ParkedJob = z.lazy(() =>
  z.object({
    jobId: z.string(),
    queue: z.string(),
    runbook: z.string(),
    node: z.optional(z.string()),
    reason: ParkReason,
    why: z.string(),
    since: z.string(),
  }),
);
export type ParkedJob = z.infer<typeof ParkedJob>;

export const ApprovalState = z.enum(['pending', 'approved', 'rejected', 'expired']);
export type ApprovalState = z.infer<typeof ApprovalState>;

export const ApprovalRecord = z.lazy(() =>
  z.object({
    jobId: z.string(),
    queue: z.string(),
    runbook: z.string(),
    node: z.optional(z.string()),
    /** BullMQ job timestamp: ids repeat after the dedup window, and an old job's decision must not carry over. */
    jobCreatedAt: z.number(),
    state: ApprovalState,
    summary: z.string(),
    /** The steps this decision covers, as the plan stated them, each with why it needs approval. */
    steps: z.array(z.object({ id: z.string(), description: z.string(), why: z.string() })),
    requestedAt: z.string(),
    /** A pending request not decided by then expires: the job fails (refused) and nothing runs. */
    expiresAt: z.string(),
    decidedBy: z.optional(z.string()),
    decidedAt: z.optional(z.string()),
    why: z.optional(z.string()),
    /** An approval is good until then; a job that reaches the step later is refused. */
    validUntil: z.optional(z.string()),
    /** The asking worker's seal over the request (src/core/controls/approval-request-seal.ts). */
    requestSeal: z.optional(Seal),
  }),
);
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

export const BreakerName = z.string().check(z.regex(/^(cluster|storm|node\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/, 'expected cluster, storm or node/<node>'));

export const TripRecord = z.lazy(() =>
  z.object({
    breaker: z.string(),
    why: z.string(),
    at: z.string(),
    count: z.number(),
    cap: z.number(),
    /** The storm breaker: how many of the nodes in its window each source (alertmanager, k8s-event, ...) started. */
    sources: z.optional(z.record(z.string(), z.number())),
  }),
);
export type TripRecord = z.infer<typeof TripRecord>;

export const AuditEntry = z.object({
  at: z.string(),
  by: z.string(),
  action: z.string(),
  target: z.string(),
  why: z.string(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/**
 * The first time the receiver's Node watch saw a node's `node.kubernetes.io/out-of-service` taint
 * (docs/decisions/0008 §4.1): the boot the node ran then is what out-of-service-taint-release
 * compares with (the node must have booted since). Kept until the taint goes.
 */
export const TaintSighting = z.lazy(() =>
  z.object({
    node: z.string(),
    timeAdded: z.optional(z.string()),
    bootIdAtFirstSight: z.optional(z.string()),
    readyAtFirstSight: z.optional(z.string()),
    firstSeenAt: z.string(),
  }),
);
export type TaintSighting = z.infer<typeof TaintSighting>;

export function parseJson<T>(schema: z.ZodMiniType<T>, text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    const r = schema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
