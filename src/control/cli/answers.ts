import { z } from 'zod';

// The receiver's answers as the CLI reads them: each command parses what it prints (the rest
// passes through for --json), so an answer of another shape (another version, a proxy's error
// page) is named, not printed as "undefined".

const s = z.string();
const opt = <T extends z.ZodType>(t: T) => t.nullish();
const n = z.number();

const Step = z.looseObject({
  id: s,
  status: opt(s),
  description: opt(s),
  destructive: opt(z.boolean()),
  risk: opt(s),
  highRisk: opt(z.boolean()),
});
const Command = z.looseObject({
  argv: z.array(s),
  exitCode: opt(n),
  timedOut: opt(z.boolean()),
  durationMs: opt(n),
  stdout: opt(s),
  stderr: opt(s),
});
const Result = z.looseObject({
  mode: opt(s),
  modeWhy: opt(s),
  outcome: opt(s),
  summary: opt(s),
  refusals: opt(z.array(s)),
  steps: opt(z.array(Step)),
  plan: opt(z.looseObject({ steps: opt(z.array(Step)) })),
  commands: opt(z.array(Command)),
});

export const ExplainAnswer = z.looseObject({
  signals: z.array(z.unknown()),
  jobs: z.array(z.looseObject({ runbook: s, node: opt(s), key: s })),
  ignored: z.array(z.looseObject({ reason: s, detail: s })),
});

export const JobsAnswer = z.looseObject({
  jobs: z.array(z.looseObject({ id: s, node: opt(s), recordNames: opt(s), runbook: s, state: s, outcome: opt(s), attemptsMade: n, createdAt: s })),
});

export const FleetAnswer = z.looseObject({
  nodes: n,
  nodesWithOpen: n,
  agentsMissing: n,
  snapshotAt: s,
  total: n,
  clusterBreakers: z.array(z.looseObject({ breaker: s, why: s })),
  clusterPaused: opt(z.looseObject({ by: s, at: s })),
  rows: z.array(
    z.looseObject({
      node: s,
      agent: s,
      open: n,
      depth: n,
      active: n,
      parked: n,
      failed: n,
      breaker: opt(z.looseObject({ why: s })),
      paused: opt(z.looseObject({ by: s })),
    }),
  ),
});

export const JobAnswer = z.looseObject({
  id: s,
  runbook: s,
  node: opt(s),
  queue: s,
  state: s,
  attemptsMade: n,
  createdAt: s,
  finishedAt: opt(s),
  failedReason: opt(s),
  result: opt(Result),
  progress: opt(
    z.looseObject({
      result: opt(Result),
      parked: opt(z.looseObject({ reason: s, since: opt(s), why: s, plan: opt(z.looseObject({ summary: opt(s), steps: opt(z.array(Step)) })) })),
    }),
  ),
  log: opt(z.array(s)),
});

export const ApprovalAnswer = z.looseObject({ state: s, decidedBy: opt(s), why: opt(s), expiresAt: s });

export const DecisionAnswer = z.looseObject({ state: s, decidedBy: opt(s), why: opt(s), steps: z.array(z.looseObject({ id: s })) });

export const ReleaseAnswer = z.looseObject({ recordedAs: s, accepted: z.looseObject({ id: s, queue: s, deduplicated: z.boolean() }) });

export const RetryAnswer = z.looseObject({ id: s, queue: s, recordedAs: s });

export const RevokeAnswer = z.looseObject({ node: s, generation: n, raised: z.boolean(), redisUser: s, recordedAs: s });

export const PauseAnswer = z.looseObject({
  changed: z.boolean(),
  recordedAs: opt(s),
  released: opt(n),
  pauses: z.looseObject({ cluster: opt(z.unknown()), nodes: z.record(s, z.unknown()), runbooks: opt(z.record(s, z.unknown())) }),
});

export const BreakerResetAnswer = z.looseObject({ cleared: opt(z.looseObject({ why: s })), released: n });

export const BreakersAnswer = z.looseObject({
  breakers: z.array(z.looseObject({ name: s, tripped: opt(z.looseObject({ at: s, why: s })), count: n, cap: n, windowSeconds: n })),
});

const Override = z.looseObject({ mode: s, by: s, at: s, why: s });
export const ControlsAnswer = z.looseObject({
  modes: z.looseObject({
    configured: z.looseObject({ default: s, runbooks: z.record(s, s) }),
    overrides: z.looseObject({ runbooks: z.record(s, Override), nodes: z.record(s, Override) }),
  }),
});

export const ApprovalsAnswer = z.looseObject({
  approvals: z.array(z.looseObject({ jobId: s, node: opt(s), runbook: s, expiresAt: s, steps: z.array(z.looseObject({ id: s, why: s })) })),
});

/** The incident page's answer: its top-level shape checked; the page's own types name the rest. */
export const IncidentAnswer = z.looseObject({
  incident: z.looseObject({
    id: s,
    queue: s,
    runbook: s,
    node: s,
    state: s,
    signals: z.array(z.unknown()),
    steps: z.array(z.unknown()),
    refusals: z.array(s),
  }),
  audit: z.array(z.unknown()),
  events: z.union([z.looseObject({ unknown: s }), z.looseObject({ events: z.array(z.unknown()) })]),
  log: z.array(s),
});

/** `schema`'s reading of `answer`, or an error naming what the receiver sent instead. */
export function read<T extends z.ZodType>(what: string, schema: T, answer: unknown): z.infer<T> {
  const r = schema.safeParse(answer);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new Error(`the receiver's answer to ${what} is not what this CLI reads: ${issue?.path.join('.') || '(top)'}: ${issue?.message ?? 'invalid'}`);
}

const Placeholder = z.looseObject({
  node: s,
  pv: s,
  path: s,
  loop: s,
  since: s,
  reportedAt: s,
  attached: z.boolean().nullable(),
  diskBack: z.boolean(),
  heldBy: z.array(s).nullable(),
});
export type PlaceholderRow = z.infer<typeof Placeholder>;

export const PlaceholdersAnswer = z.looseObject({
  placeholders: z.array(Placeholder),
  unreadable: z.array(z.looseObject({ node: s, file: s })),
  invalid: z.array(z.looseObject({ node: s, why: s })),
});
export type PlaceholdersAnswer = z.infer<typeof PlaceholdersAnswer>;

export const ArmAnswer = z.looseObject({ nodes: n, expiresAt: s });
