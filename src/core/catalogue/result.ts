import { z } from '../zod.ts';
import { StepEvidence } from './step-evidence.ts';

// What a runbook leaves behind: facts seen, the plan, every command run, refusals with reasons,
// and the verification. Stored as the BullMQ job's return value (or, for a failed job, in its
// progress), shown by GET /v1/jobs/:id. Parsed when read back: Redis is a boundary.

export const Mode = z.enum(['dry-run', 'enforce']);
export type Mode = z.infer<typeof Mode>;

export const CommandRecord = z.lazy(() =>
  z.object({
    argv: z.array(z.string()),
    exitCode: z.nullable(z.number().check(z.int())),
    signal: z.optional(z.nullable(z.string())),
    timedOut: z.boolean(),
    durationMs: z.number(),
    stdout: z.string(),
    stderr: z.string(),
    /** Pids still alive after the kill (stuck in D state on a dead device): reported, never waited for. */
    stuckPids: z.optional(z.array(z.number().check(z.int()))),
  }),
);
export type CommandRecord = z.infer<typeof CommandRecord>;

export const StepRecord = z.lazy(() =>
  z.object({
    id: z.string(),
    description: z.string(),
    destructive: z.boolean(),
    status: z.enum(['done', 'skipped-already-done', 'would-run', 'failed']),
    startedAt: z.string(),
    durationMs: z.number(),
    commands: z.array(CommandRecord),
    error: z.optional(z.string()),
    /** What the step relied on (required for a destructive step), as the plan observed it. */
    evidence: z.optional(z.array(StepEvidence)),
    /** Dry-run: enforce would have waited here for evidence to mature (why, until when). */
    waitsFor: z.optional(z.string()),
  }),
);
export type StepRecord = z.infer<typeof StepRecord>;

/** `waiting`: parked by an operator control (pause, approval, breaker); shown in the job's progress while it waits. */
export const Outcome = z.enum(['succeeded', 'nothing-to-do', 'planned', 'refused', 'failed', 'not-implemented', 'waiting']);
export type Outcome = z.infer<typeof Outcome>;

export const RunbookResult = z.lazy(() =>
  z.object({
    runbook: z.string(),
    mode: Mode,
    /** Why this mode: configuration, an API override (who, when, why) or the node's label. */
    modeWhy: z.optional(z.string()),
    outcome: Outcome,
    summary: z.string(),
    facts: z.unknown(),
    plan: z.unknown(),
    refusals: z.array(z.string()),
    steps: z.array(StepRecord),
    commands: z.array(CommandRecord),
    verification: z.optional(z.unknown()),
    /** Node-agent identity, so a result always says where it ran. */
    ranOn: z.string(),
  }),
);
export type RunbookResult = z.infer<typeof RunbookResult>;
