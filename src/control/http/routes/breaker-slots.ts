import { Router, type RequestHandler } from 'express';
import { BREAKER_SLOTS_PATH, SealedBreakerAsk } from '../../../core/controls/breaker-wire.ts';
import { verifyBreakerAsk } from '../../../core/controls/breaker-seal.ts';
import { Breakers, type BreakerCaps } from '../../../adapters/controls/breakers.ts';
import type { Logger } from '../../../adapters/observability/logger.ts';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import type { Keyring } from '../../../core/trust/keyring.ts';

// POST /v1/agents/breakers: an enrolled node agent's breaker slot and job start, taken here as
// the receiver's own Redis user (src/core/controls/breaker-wire.ts says why). Not an operator route:
// the request is sealed with the asking node's work key of its queue, and the node it names must
// be that queue's; the caps are the receiver's. A replay of a captured request within its minute
// takes no new slot (the slot's member is the job, the step and the seal's time).
//
// Anyone who reaches the port may send one: nothing a request names is kept before its seal holds
// (src/core/controls/breaker-seal.ts derives the one key it needs, for that check only).

export interface BreakerSlotDeps {
  redis: RedisConnection;
  prefix: string;
  /** Every role's root (the receiver's keyring): the node's work key is derived from it. */
  roots: Keyring;
  caps: BreakerCaps;
  log: Logger;
  now?: () => number;
}

export function breakerSlotRoutes(d: BreakerSlotDeps, before: RequestHandler[]): Router {
  const r = Router();
  r.post(BREAKER_SLOTS_PATH, ...before, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const b = SealedBreakerAsk.safeParse(req.body);
    if (!b.success) return res.status(400).json({ error: `breaker request: ${b.error.issues[0]?.message ?? 'invalid'}` });
    const { ask, seal } = b.data;
    const v = verifyBreakerAsk(d.roots, ask, seal, (d.now ?? Date.now)());
    if (!v.ok) {
      const why = `${v.reason}: ${v.detail}`;
      d.log.warn({ node: ask.node, op: ask.op, why }, "breaker request refused: not sealed by that node's agent");
      return res.status(403).json({ error: `not sealed with node ${ask.node}'s work key (${why})` });
    }
    const breakers = new Breakers(d.redis, d.prefix, () => new Date(v.seal.iat));
    if (ask.op === 'reserve') return res.json(await breakers.reserveDestructive(d.caps, { node: ask.node, jobId: ask.jobId, stepId: ask.stepId }));
    const tripped = await breakers.recordNodeActivity(d.caps, ask.node, ask.source);
    return res.json(tripped ? { tripped } : {});
  });
  return r;
}
