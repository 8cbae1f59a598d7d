import { GenerationalMap } from '../collections/generational-map.ts';
import { createHmac } from '../node-crypto.ts';
import type { Keyring } from './keyring.ts';
import type { Role } from './roles.ts';

// Work keys are scoped to a queue: work for queue Q is sealed with HMAC(root, label(role, Q)),
// never with the issuer's root itself. An issuer holds the root of its role and derives the key
// of each queue it writes to (cached: one HMAC per queue, for the most recent queues); a consumer
// holds only the derived keys of the one queue it consumes, handed over at enrolment
// (src/core/trust/enrolment-wire.ts). So nothing a node agent holds makes or checks a seal for
// another node's queue. The label is versioned: a new derivation never collides with this one.

const label = (role: Role, queue: string): string => `volume-medic/work/v1\0${role}\0${queue}`;

/** The key of `role`'s work on `queue`, derived from that role's root. */
export const workKeyOf = (root: Buffer, role: Role, queue: string): Buffer => createHmac('sha256', root).update(label(role, queue), 'utf8').digest();

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
const derivedRings = new WeakMap<Keyring, GenerationalMap<string, Keyring>>();
const RINGS_KEPT = 16_384;

/**
 * The keys that check work read from `queue`: the ring itself when it was enrolled for that queue,
 * else every root's key derived for it (cached per ring and queue; an enrolled ring asked about
 * another queue has none, see outOfScope).
 */
export function workRingFor(ring: Keyring, queue: string): Keyring {
  if (ring.scope !== undefined) return ring.scope === queue ? ring : { verify: new Map(), scope: ring.scope };
  let byQueue = derivedRings.get(ring);
  if (!byQueue) derivedRings.set(ring, (byQueue = new GenerationalMap(RINGS_KEPT)));
  let derived = byQueue.get(queue);
  if (!derived) {
    const verify = new Map<string, Buffer>();
    for (const [name, root] of ring.verify) verify.set(name, workKeyOf(root, name.slice(0, name.indexOf('.')) as Role, queue));
    derived = { verify, scope: queue };
    byQueue.set(queue, derived);
  }
  return derived;
}

/**
 * A ring of the one key `name` (`<role>.<kid>`) of `queue`, derived afresh from that root and
 * kept by nobody (one HMAC); an empty ring when there is no such root. For checking what anyone
 * may send (src/core/controls/breaker-seal.ts): a cache keyed by the queue a request names would
 * grow with every name an attacker makes up.
 */
export function workKeyRing(roots: Keyring, queue: string, name: string): Keyring {
  if (roots.scope !== undefined) return roots.scope === queue ? roots : { verify: new Map(), scope: roots.scope };
  const root = roots.verify.get(name);
  const role = name.slice(0, name.indexOf('.')) as Role;
  return { verify: root ? new Map([[name, workKeyOf(root, role, queue)]]) : new Map(), scope: queue };
}
