import { z } from '../zod.ts';

// The positive evidence a step relies on (docs/safety.md): one claim per
// item, where it was seen, when, and whether it holds. Plans attach it to their steps, the engine
// judges it before a destructive step runs (workers/engine/judge-evidence.ts), and the job's result
// carries it, so a reader sees what each destructive step stood on and each refusal what was
// missing. Parsed when read back: Redis is a boundary.

/**
 * - `holds`: observed, and the claim is true;
 * - `fails`: observed, and the claim is false (the map is mounted, a path is alive);
 * - `missing`: could not be observed (command failed, API unreachable, file unreadable): unknown;
 * - `contradicted`: sources disagree with each other.
 */
const EvidenceStatus = z.enum(['holds', 'fails', 'missing', 'contradicted']);

export const StepEvidence = z.lazy(() =>
  z.object({
    /** The claim, in words: "no process outside the known victims has mpatha open". */
    claim: z.string().check(z.maxLength(500)),
    /** How it was seen: the command, file or API ("multipath -ll", "/proc/*\/fd", "VolumeAttachments"). */
    source: z.string().check(z.maxLength(300)),
    /** When (ISO 8601). Older than the runbook's evidence age limit at the step: stale, refused. */
    observedAt: z.string(),
    status: EvidenceStatus,
    /** What was seen, or why it could not be. */
    detail: z.optional(z.string().check(z.maxLength(1000))),
    /**
     * A claim that must have held for a while before the step may run: since when it held (the
     * first of `samples` observations, kept by the agent across jobs) and whether it held across
     * a reboot of the node. Too young or one sample: the step waits; across a reboot: enough.
     */
    persistence: z.optional(
      z.object({
        since: z.string(),
        samples: z.number().check(z.int(), z.gte(1)),
        acrossBoot: z.boolean(),
        mustHoldMs: z.number().check(z.int(), z.gte(0)),
        minSamples: z.number().check(z.int(), z.gte(1)),
      }),
    ),
  }),
);
export type StepEvidence = z.infer<typeof StepEvidence>;
