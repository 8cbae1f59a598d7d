import { z } from '../zod.ts';

// A node over its Redis memory budget keeps its Redis user, made read-only: its agent still
// connects and reads (no WRONGPASS, so no enrolment loop), every write is refused (NOPERM), also
// inside a script (Redis checks each key a script touches against the ACL). The restriction is
// recorded in Redis, so every receiver replica applies it whenever it applies the node's user
// again (enrolment, reconcile, after a failover), also to a Node deleted and made again: only an
// operator lifts it (POST /v1/redis-budget/release).

/** hash node -> NodeRestriction JSON: the nodes whose Redis user may only read. On the primary. */
export const nodeRestrictionsKey = (prefix: string): string => `${prefix}:vm:acl:restricted`;

export const NodeRestriction = z.object({
  /** When the receiver restricted it (ISO 8601). */
  at: z.string(),
  /** Its keys' bytes when counted, and the budget then. */
  usedBytes: z.number(),
  budgetBytes: z.number(),
  /** What the receiver gave back of its keys after restricting it. */
  removed: z.optional(z.object({ keys: z.number(), bytes: z.number() })),
});
export type NodeRestriction = z.infer<typeof NodeRestriction>;

/**
 * A node user's rules with every key pattern read-only: `~p` and `%RW~p` become `%R~p`, a
 * write-only `%W~p` goes, `allkeys` becomes `%R~*`; everything else (commands, password,
 * channels) as it was, so the same user reads what it read before.
 */
export function readOnlyRules(rules: readonly string[]): string[] {
  const out: string[] = [];
  for (const r of rules) {
    if (r === 'allkeys') out.push('%R~*');
    else if (r.startsWith('~')) out.push(`%R${r}`);
    else if (r.startsWith('%')) {
      const tilde = r.indexOf('~');
      if (tilde > 0 && r.slice(1, tilde).toUpperCase().includes('R')) out.push(`%R${r.slice(tilde)}`);
    } else out.push(r);
  }
  return out;
}
