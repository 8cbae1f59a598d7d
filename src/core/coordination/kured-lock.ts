import { z } from '../zod.ts';

// kured's reboot lock (kubereboot/kured pkg/daemonsetlock): an annotation on kured's own
// DaemonSet, `weave.works/kured-node-lock` by default (its --lock-annotation). With
// --concurrency 1 the value is one lock, `{"nodeID":"worker-1","metadata":{"unschedulable":false},
// "created":"2026-12-07T13:00:00Z","TTL":0}`; with more, `{"maxOwners":2,"locks":[<lock>, ...]}`.
// TTL is a Go time.Duration (nanoseconds); 0 never expires, and a lock older than a TTL > 0 is
// one kured itself takes as released (its ttlExpired), so it holds no node here either.
// kured holds the lock from before it drains a node until the node is back and uncordoned.

export const KURED_LOCK_ANNOTATION = 'weave.works/kured-node-lock';

// Lazy: the node agent imports this at start but parses only when a step asks (src/core/zod.ts).
const Lock = z.lazy(() => z.object({ nodeID: z.string(), created: z.optional(z.string()), TTL: z.optional(z.number()) }));
const MultiLock = z.lazy(() => z.object({ maxOwners: z.optional(z.number()), locks: z.nullable(z.array(Lock)) }));

type Lock = z.infer<typeof Lock>;

const expired = (lock: Lock, now: Date): boolean => {
  const ttlMs = (lock.TTL ?? 0) / 1e6;
  if (ttlMs <= 0 || !lock.created) return false;
  const created = Date.parse(lock.created);
  return Number.isFinite(created) && now.getTime() - created >= ttlMs;
};

/**
 * The nodes kured's lock annotation names as holding it now, or why the value cannot be read (an
 * unreadable lock is not a free one: the caller waits). An empty or absent value: nobody.
 */
export function kuredLockHolders(value: string | undefined, now: Date): { nodes: string[] } | { error: string } {
  if (value === undefined || value.trim() === '') return { nodes: [] };
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return { error: `kured's lock annotation is not JSON: ${value.slice(0, 120)}` };
  }
  const alive = (locks: readonly Lock[]) => ({ nodes: locks.filter((l) => l.nodeID !== '' && !expired(l, now)).map((l) => l.nodeID) });
  const single = Lock.safeParse(json);
  if (single.success) return alive([single.data]);
  const multi = MultiLock.safeParse(json);
  if (multi.success) return alive(multi.data.locks ?? []);
  return { error: `kured's lock annotation is neither one lock nor a multi-lock: ${value.slice(0, 120)}` };
}
