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

/** The announcement on `queue`; undefined when there is none, or what is there does not parse (an agent that cannot say what it runs is asked for nothing new). */
export async function readAgentRuns(redis: RedisConnection, prefix: string, queue: string): Promise<AgentRuns | undefined> {
  const raw = await redis.get(agentRunsKey(prefix, queue));
  if (raw === null) return undefined;
  try {
    const r = AgentRuns.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
