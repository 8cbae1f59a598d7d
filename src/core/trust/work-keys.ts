import { GenerationalMap } from '../collections/generational-map.ts';
import { createHmac } from '../node-crypto.ts';
import { atGeneration, generationOfKey } from './key-generations.ts';
import type { Keyring } from './keyring.ts';
import type { Role } from './roles.ts';

// Work keys are scoped to a queue: work for queue Q is sealed with HMAC(root, label(role, Q)),
// never with the issuer's root itself. An issuer holds the root of its role and derives the key
// of each queue it writes to (cached: one HMAC per queue, for the most recent queues); a consumer
// holds only the derived keys of the one queue it consumes, handed over at enrolment
// (src/core/trust/enrolment-wire.ts). So nothing a node agent holds makes or checks a seal for
// another node's queue. The label is versioned: a new derivation never collides with this one.
// A node's generation (src/core/trust/key-generations.ts) is part of the label from 1 on; at 0
// the label is v1's, unchanged, so keys of nodes never revoked stay what they were.

const label = (role: Role, queue: string, generation: number): string =>
  generation === 0 ? `volume-medic/work/v1\0${role}\0${queue}` : `volume-medic/work/v2\0${role}\0${queue}\0${generation}`;

/** The key of `role`'s work on `queue` at the queue's `generation` (default 0), derived from that role's root. */
export const workKeyOf = (root: Buffer, role: Role, queue: string, generation = 0): Buffer =>
  createHmac('sha256', root)
    .update(label(role, queue, generation), 'utf8')
    .digest();

/** Why a ring cannot check work on `queue`, or undefined when it can. */
export const outOfScope = (ring: Keyring, queue: string): string | undefined =>
  ring.scope !== undefined && ring.scope !== queue ? `this process holds work keys for queue ${ring.scope} only, not ${queue}` : undefined;

/**
 * Derived rings per ring (a WeakMap: they go with the ring) and queue. The queues come from Redis
 * (a job's queue, the queue registry, an approval record), never from a request nobody
 * authenticated (breaker asks derive their one key afresh: workKeyRing). Bounded all the same, at
 * RINGS_KEPT queues per ring, the most recently derived (a fleet the size one Redis serves): a
 * queue named in a record a node wrote costs at most a place in it, and one more derivation later.
 */
const derivedRings = new WeakMap<Keyring, GenerationalMap<string, Keyring & { generation: number }>>();
const RINGS_KEPT = 16_384;

/**
 * The keys that check work read from `queue`: the ring itself when it was enrolled for that queue,
 * else every root's key derived for it at the queue's current generation (ring.generations),
 * named for that generation (cached per ring and queue, derived again when the generation rose;
 * an enrolled ring asked about another queue has none, see outOfScope).
 */
export function workRingFor(ring: Keyring, queue: string): Keyring {
  if (ring.scope !== undefined) return ring.scope === queue ? ring : { verify: new Map(), scope: ring.scope };
  const generation = ring.generations?.of(queue) ?? 0;
  let byQueue = derivedRings.get(ring);
  if (!byQueue) derivedRings.set(ring, (byQueue = new GenerationalMap(RINGS_KEPT)));
  let derived = byQueue.get(queue);
  if (derived?.generation !== generation) {
    const verify = new Map<string, Buffer>();
    for (const [name, root] of ring.verify)
      verify.set(atGeneration(name, generation), workKeyOf(root, name.slice(0, name.indexOf('.')) as Role, queue, generation));
    derived = { verify, scope: queue, generation };
    byQueue.set(queue, derived);
  }
  return derived;
}

/**
 * A ring of the one key `name` (`<role>.<kid>`, `.g<n>` at generation n) of `queue`, derived
 * afresh from that root at the queue's current generation and kept by nobody (one HMAC); an empty
 * ring when there is no such root or the name is of another generation (revoked, or not yet known
 * here). For checking what anyone may send (src/core/controls/breaker-seal.ts): a cache keyed by
 * the queue a request names would grow with every name an attacker makes up.
 */
export function workKeyRing(roots: Keyring, queue: string, name: string): Keyring {
  if (roots.scope !== undefined) return roots.scope === queue ? roots : { verify: new Map(), scope: roots.scope };
  const generation = roots.generations?.of(queue) ?? 0;
  const named = generationOfKey(name);
  const root = named.generation === generation ? roots.verify.get(named.base) : undefined;
  const role = named.base.slice(0, named.base.indexOf('.')) as Role;
  return { verify: root ? new Map([[name, workKeyOf(root, role, queue, generation)]]) : new Map(), scope: queue };
}
