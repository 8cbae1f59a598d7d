import type { RunbookName } from '../../core/catalogue/jobs.ts';
import { SignalSource } from '../../core/catalogue/evidence.ts';
import { z } from '../../core/zod.ts';
import type { RedisConnection } from '../redis/redis.ts';

// An agent's announcement of what it runs: the runbooks of its registry and the evidence sources
// its catalogue parses, written by the agent at each start under its own queue's keys (the only
// ones a node's Redis user may write: src/adapters/redis/node-user-acl.ts). No lifetime: an agent
// that stopped still runs what it announced once it is back, and the next start of another
// release replaces it. The receiver reads it before storing a job beyond what every supported
// release runs (src/core/catalogue/announced.ts, src/control/ingest/agent-gate.ts). Names this
// release does not know (a newer agent's) are kept as text: an unknown name is simply not asked for.

/** Under `<prefix>:<queue>:` like the presence key (agent-presence.ts): the queue's hash tag and its node user's keys. */
export const agentRunsKey = (prefix: string, queue: string): string => `${prefix}:${queue}:vm:runs`;

// Lazy: the agent's start path imports this file but only the receiver parses an announcement.
export const AgentRuns = z.lazy(() =>
  z.object({
    version: z.literal(1),
    runbooks: z.array(z.string().check(z.maxLength(100))).check(z.maxLength(200)),
    sources: z.array(z.string().check(z.maxLength(100))).check(z.maxLength(200)),
    /** Who wrote it (NODE_NAME or `cluster-worker`) and when (RFC 3339), for humans. */
    by: z.string().check(z.maxLength(300)),
    at: z.string().check(z.maxLength(40)),
  }),
);
export type AgentRuns = z.infer<typeof AgentRuns>;

/** What this release's agent announces for a registry of `runbooks`. */
export function agentRuns(runbooks: readonly RunbookName[], by: string, now: Date): AgentRuns {
  return { version: 1, runbooks: [...runbooks], sources: [...SignalSource.options], by, at: now.toISOString() };
}

export async function writeAgentRuns(redis: RedisConnection, prefix: string, queue: string, runs: AgentRuns): Promise<void> {
  await redis.set(agentRunsKey(prefix, queue), JSON.stringify(runs));
}

/**
 * The longest announcement a receiver reads (bytes): more than the schema's own bounds allow (200
 * names of 100 characters in each list), far more than a real one. The key is the node's to
 * write, up to its whole Redis budget: read whole, one node could make every receiver fetch and
 * parse megabytes per read.
 */
export const AGENT_RUNS_MAX_BYTES = 65_536;

/** The announcement on `queue`; undefined when there is none, it is longer than AGENT_RUNS_MAX_BYTES, or does not parse (an agent that cannot say what it runs is asked for nothing new). */
export async function readAgentRuns(redis: RedisConnection, prefix: string, queue: string): Promise<AgentRuns | undefined> {
  // One byte past the bound: a value that fills it is too long. A missing key reads as ''.
  const raw = await redis.getrange(agentRunsKey(prefix, queue), 0, AGENT_RUNS_MAX_BYTES);
  if (raw === '' || Buffer.byteLength(raw) > AGENT_RUNS_MAX_BYTES) return undefined;
  try {
    const r = AgentRuns.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
