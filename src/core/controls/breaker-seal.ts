import { nodeQueueName } from '../catalogue/queues.ts';
import type { Keyring } from '../trust/keyring.ts';
import { verifySeal, type Seal, type Verdict } from '../trust/seal.ts';
import { workKeyRing } from '../trust/work-keys.ts';
import { BREAKER_SEAL_TTL_MS, breakerSubject, type BreakerAsk } from './breaker-wire.ts';

// How the receiver checks an agent's breaker ask (src/control/http/routes/breaker-slots.ts) before
// doing anything for it. Anyone who reaches the receiver's port can send one, so the checks that
// need no key come first (a node agent's seal, living at most BREAKER_SEAL_TTL_MS, dated near the
// receiver's clock), and then the one key the seal names is derived for the named node's queue,
// used and dropped: nothing derived from a request that no seal proved yet is kept.

/** How far ahead of the receiver's clock an agent may date its ask (its clock may run that fast). */
const AHEAD_MS = 60_000;

/** Why the seal's dates make it no breaker seal by the receiver's clock `now`; undefined when they hold. */
export function breakerSealDates(seal: Pick<Seal, 'iat' | 'exp'>, now: number): Extract<Verdict, { ok: false }> | undefined {
  const lifetime = seal.exp - seal.iat;
  if (lifetime <= 0 || lifetime > BREAKER_SEAL_TTL_MS)
    return {
      ok: false,
      reason: 'malformed',
      detail: `a breaker seal lives at most ${BREAKER_SEAL_TTL_MS / 1000} s, this one ${Math.round(lifetime / 1000)} s`,
    };
  if (seal.iat > now + AHEAD_MS)
    return { ok: false, reason: 'not-yet-valid', detail: `dated ${Math.round((seal.iat - now) / 1000)} s after the receiver's clock` };
  if (now > seal.exp) return { ok: false, reason: 'expired', detail: `expired ${Math.round((now - seal.exp) / 1000)} s ago by the receiver's clock` };
  return undefined;
}

/**
 * The seal of `ask`, checked as the node agent's of the node the ask names: its work key of that
 * node's queue, derived from `roots` (the receiver's) for this check only.
 */
export function verifyBreakerAsk(roots: Keyring, ask: BreakerAsk, seal: Seal, now: number): Verdict {
  if (seal.iss !== 'node-agent') return { ok: false, reason: 'wrong-issuer', detail: `sealed by the ${seal.iss}, not a node agent` };
  const dates = breakerSealDates(seal, now);
  if (dates) return dates;
  const queue = nodeQueueName(ask.node);
  return verifySeal(workKeyRing(roots, queue, `${seal.iss}.${seal.kid}`), 'breaker', breakerSubject(queue), ask, seal, now);
}
