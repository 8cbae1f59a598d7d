import { nodeQueueName } from '../catalogue/queues.ts';
import type { Keyring } from '../trust/keyring.ts';
import { verifySeal, type Seal, type Verdict } from '../trust/seal.ts';
import { workKeyRing } from '../trust/work-keys.ts';
import { breakerSubject, type BreakerAsk } from './breaker-wire.ts';

// How the receiver checks an agent's breaker ask (src/control/http/routes/breaker-slots.ts) before
// doing anything for it. Anyone who reaches the receiver's port can send one, so what needs no key
// is checked first (a node agent's seal), and then the one key the seal names is derived for the
// named node's queue, used and dropped: nothing derived from a request that no seal proved yet is
// kept.

/**
 * The seal of `ask`, checked as the node agent's of the node the ask names: its work key of that
 * node's queue, derived from `roots` (the receiver's) for this check only.
 */
export function verifyBreakerAsk(roots: Keyring, ask: BreakerAsk, seal: Seal, now: number): Verdict {
  if (seal.iss !== 'node-agent') return { ok: false, reason: 'wrong-issuer', detail: `sealed by the ${seal.iss}, not a node agent` };
  const queue = nodeQueueName(ask.node);
  return verifySeal(workKeyRing(roots, queue, `${seal.iss}.${seal.kid}`), 'breaker', breakerSubject(queue), ask, seal, now);
}
