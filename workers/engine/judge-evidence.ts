import type { StepRecord } from '../../src/core/catalogue/result.ts';
import type { StepEvidence } from '../../src/core/catalogue/step-evidence.ts';
import type { PlannedStep } from './runbook.ts';

// Unknown means refuse (docs/safety.md), in one place. The engine asks
// judgeEvidence() before it applies a step (after the step's own "already done?" check, before
// the operator gate): a destructive step runs only when it names evidence, every item of it
// holds, none is older than the runbook's age limit, and every claim that must persist has held
// long enough over enough observations (or across a reboot). Plans build the same items for the
// interlocks they check, so a plan's refusal and the engine's name the same missing evidence.

/** Default age limit of a step's evidence: the engine re-observes on every attempt, so 5 min is generous. */
const DEFAULT_EVIDENCE_MAX_AGE_MS = 5 * 60_000;
/** A clock ahead of ours by more than this makes an observation time contradictory. */
const FUTURE_SLACK_MS = 60_000;

export type EvidenceVerdict =
  | { kind: 'go' }
  | { kind: 'refuse'; reasons: string[] }
  /** A persistent claim is too young: run the step again after `until`. */
  | { kind: 'wait'; until: Date; why: string };

const seconds = (ms: number): string => `${Math.round(ms / 1000)} s`;

/** One line per item: "<claim> (<source>, <status>[: detail])". */
export function describeEvidence(e: StepEvidence): string {
  return `${e.claim} (${e.source}${e.status === 'holds' ? '' : `, ${e.status}`}${e.detail ? `: ${e.detail}` : ''})`;
}

/** Items that are not positive evidence: why, in the words of a refusal. */
function evidenceProblems(items: readonly StepEvidence[], now: Date, maxAgeMs: number): string[] {
  const out: string[] = [];
  for (const e of items) {
    const seen = Date.parse(e.observedAt);
    const where = `(${e.source}${e.detail ? `: ${e.detail}` : ''})`;
    if (e.status === 'fails') out.push(`not true that ${e.claim} ${where}`);
    else if (e.status === 'missing') out.push(`no evidence that ${e.claim} ${where}`);
    else if (e.status === 'contradicted') out.push(`contradictory evidence about whether ${e.claim} ${where}`);
    else if (Number.isNaN(seen)) out.push(`the evidence that ${e.claim} has no readable time (${e.observedAt})`);
    else if (seen - now.getTime() > FUTURE_SLACK_MS) out.push(`the evidence that ${e.claim} is dated ${e.observedAt}, in the future`);
    else if (now.getTime() - seen > maxAgeMs)
      out.push(`the evidence that ${e.claim} is stale: observed ${seconds(now.getTime() - seen)} ago (${e.source}), the limit is ${seconds(maxAgeMs)}`);
  }
  return out;
}

/** A plan's reasons to leave something alone, from the evidence it just observed (nothing is stale at plan time). */
export function planProblems(items: readonly StepEvidence[], observedAt: string): string[] {
  return evidenceProblems(items, new Date(observedAt), Number.POSITIVE_INFINITY);
}

/** When every persistent claim will have held long enough, or undefined when they all have. */
function maturity(items: readonly StepEvidence[], now: Date): { until: Date; why: string } | undefined {
  let latest: { until: Date; why: string } | undefined;
  for (const e of items) {
    const p = e.persistence;
    if (!p || p.acrossBoot) continue;
    const since = Date.parse(p.since);
    const heldMs = Number.isNaN(since) ? 0 : now.getTime() - since;
    if (p.samples >= p.minSamples && heldMs >= p.mustHoldMs) continue;
    // One more observation is needed in any case when there are too few; it comes with the recheck.
    const until = new Date(Math.max(Number.isNaN(since) ? now.getTime() + p.mustHoldMs : since + p.mustHoldMs, now.getTime() + 1000));
    const why = `${e.claim}: held for ${seconds(Math.max(heldMs, 0))} over ${p.samples} observation(s); needs ${seconds(p.mustHoldMs)} over at least ${p.minSamples}, or a reboot in between`;
    if (!latest || until > latest.until) latest = { until, why };
  }
  return latest;
}

export function judgeEvidence(step: PlannedStep, now: Date, maxAgeMs: number = DEFAULT_EVIDENCE_MAX_AGE_MS): EvidenceVerdict {
  if (!step.destructive) return { kind: 'go' };
  const items = step.evidence ?? [];
  if (items.length === 0) return { kind: 'refuse', reasons: [`step ${step.id} is destructive and names no evidence: not running it`] };
  const problems = evidenceProblems(items, now, maxAgeMs);
  if (problems.length) return { kind: 'refuse', reasons: problems.map((p) => `step ${step.id}: ${p}`) };
  const young = maturity(items, now);
  if (young) return { kind: 'wait', until: young.until, why: `step ${step.id} waits for evidence to mature: ${young.why}` };
  return { kind: 'go' };
}

/** The evidence of the destructive steps a run took, in one line (Kubernetes Event notes). */
export function destructiveEvidenceLine(steps: readonly StepRecord[]): string {
  const parts = steps
    .filter((s) => s.destructive && (s.status === 'done' || s.status === 'would-run') && s.evidence?.length)
    .map((s) => `${s.id}: ${(s.evidence ?? []).map((e) => e.claim).join(', ')}`);
  return parts.length ? `evidence: ${parts.join(' | ')}` : '';
}
