// When the receiver counts every node's memory, and which nodes are over their budget.
//
// Redis has no quota per user: a node's own Redis user may write as much into its own keys as
// the server holds, and with maxmemory-policy noeviction (BullMQ's requirement) a full Redis
// refuses everyone's writes, the receiver's jobs and audit entries included. So the receiver
// measures and acts: a cheap check of INFO memory every second on each primary, and a count of
// every node's keys (SCAN + MEMORY USAGE) when memory is under pressure, and every `periodMs`
// anyway (a node can sit over its budget without Redis being full).

/** One primary's INFO memory: `used_memory` and `maxmemory` (0: no limit), in bytes. */
export interface MemorySample {
  used: number;
  max: number;
}

export interface PassPolicy {
  /** A count every this long whatever the pressure (NODE_REDIS_BUDGET_SCAN_SECONDS). */
  periodMs: number;
  /** Pressure: a primary's used_memory at this share of its maxmemory or more. */
  pressure: number;
  /** Under pressure, counts at least this far apart unless memory grew by `growth` since the last. */
  minGapMs: number;
  /** Growth of the fullest primary's share since the last count that calls for a count at once. */
  growth: number;
}

/**
 * Defaults: a count every 5 minutes; under pressure from 80% of maxmemory, at most every 10 s
 * unless memory grew by another 5% of maxmemory since the last count (a second flood right after
 * the first is counted at once, a full Redis that no node is to blame for is not counted in a loop).
 */
export const DEFAULT_PASS_POLICY: PassPolicy = { periodMs: 300_000, pressure: 0.8, minGapMs: 10_000, growth: 0.05 };

/** What is remembered of the last count: when it ended, and the fullest primary's share right after it. */
export interface LastPass {
  at: number;
  fullness: number;
}

/** The fullest primary's share of its maxmemory (0 when no primary has a limit). */
export const fullness = (samples: readonly MemorySample[]): number => Math.max(0, ...samples.filter((s) => s.max > 0).map((s) => s.used / s.max));

export type PassReason = 'first' | 'periodic' | 'pressure';

/** Is a count of every node's keys due now, and why; undefined: not now. */
export function passDue(
  samples: readonly MemorySample[],
  last: LastPass | undefined,
  now: number,
  p: PassPolicy = DEFAULT_PASS_POLICY,
): PassReason | undefined {
  if (!last) return 'first';
  const f = fullness(samples);
  if (f >= p.pressure && (now - last.at >= p.minGapMs || f - last.fullness >= p.growth)) return 'pressure';
  if (now - last.at >= p.periodMs) return 'periodic';
  return undefined;
}

/** The nodes whose keys hold more than `budget` bytes, the largest first. */
export function nodesOverBudget(usage: ReadonlyMap<string, number>, budget: number): { node: string; bytes: number }[] {
  return [...usage]
    .filter(([, bytes]) => bytes > budget)
    .map(([node, bytes]) => ({ node, bytes }))
    .sort((a, b) => b.bytes - a.bytes || (a.node < b.node ? -1 : 1));
}
