import { Router, type Request, type RequestHandler, type Response } from 'express';
import { BREAKER_SLOTS_PATH, SealedBreakerAsk, type BreakerAsk } from '../../../core/controls/breaker-wire.ts';
import { verifyBreakerAsk } from '../../../core/controls/breaker-seal.ts';
import { Breakers, type BreakerCaps } from '../../../adapters/controls/breakers.ts';
import { LogSummary } from '../../../adapters/observability/log-summary.ts';
import type { Logger } from '../../../adapters/observability/logger.ts';
import type { RedisConnection } from '../../../adapters/redis/redis.ts';
import type { Keyring } from '../../../core/trust/keyring.ts';
import type { Seal, Verdict } from '../../../core/trust/seal.ts';
import type { FailedAuthLimiter } from '../../auth/failed-auth-limiter.ts';
import { relayPart, type ControlRelay } from '../control-relay.ts';
import { failedAuthGate, tooManyFailures } from '../failed-auth-gate.ts';

// POST /v1/agents/breakers: an enrolled node agent's breaker slot and job start, taken here as
// the receiver's own Redis user (src/core/controls/breaker-wire.ts says why). Not an operator route:
// the request is sealed with the asking node's work key of its queue, and the node it names must
// be that queue's; the caps are the receiver's.
//
// Anyone who reaches the port may send one: nothing a request names is kept before its seal holds
// (src/core/controls/breaker-seal.ts derives the one key it needs, for that check only). A refusal
// spends the address's failed-auth budget (an address out of it: 429 before its body is read)
// and is logged once per interval with a count. The receiver's clock places the slot in the
// window; the seal's own time only names it, so a replay within the seal's minute takes the slot
// it already has and nothing more.

export interface BreakerSlotDeps {
  redis: RedisConnection;
  prefix: string;
  /** Every role's root (the receiver's keyring): the node's work key is derived from it. */
  roots: Keyring;
  caps: BreakerCaps;
  /** The failed-auth budget per address, shared with every route that authenticates. */
  limiter: FailedAuthLimiter;
  log: Logger;
  now?: () => number;
  /** The newest control records of the node's fields, relayed with every answer (src/control/http/control-relay.ts). */
  relay?: ControlRelay;
}

export function breakerSlotRoutes(d: BreakerSlotDeps, before: RequestHandler[]): Router {
  const r = Router();
  const now = d.now ?? Date.now;
  const breakers = new Breakers(d.redis, d.prefix, () => new Date(now()));
  const refusals = new LogSummary(d.log, "breaker request refused: not sealed by that node's agent");
  const refuse = (req: Request, res: Response, ask: BreakerAsk, v: Extract<Verdict, { ok: false }>) => {
    d.limiter.failed(req.ip ?? '');
    refusals.warn({ node: ask.node, op: ask.op, reason: v.reason, why: v.detail, from: req.ip });
    return res.status(403).json({ error: `not sealed with node ${ask.node}'s work key (${v.reason}: ${v.detail})` });
  };
  r.post(BREAKER_SLOTS_PATH, failedAuthGate(d.limiter, 'breaker requests'), ...before, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const b = SealedBreakerAsk.safeParse(req.body);
    if (!b.success) return res.status(400).json({ error: `breaker request: ${b.error.issues[0]?.message ?? 'invalid'}` });
    const { ask, seal } = b.data;
    // Checked again with nothing awaited until `failed`: concurrent asks cannot outrun the budget.
    const wait = d.limiter.retryAfter(req.ip ?? '');
    if (wait !== undefined) return tooManyFailures(res, wait, 'breaker requests');
    const v = verifyBreakerAsk(d.roots, ask, seal, now());
    if (!v.ok) return refuse(req, res, ask, v);
    const relayed = relayPart(d.relay, ask.node, d.log);
    const answer = ask.op === 'reserve' ? await reserve(breakers, d.caps, ask, v.seal) : await activity(breakers, d.caps, ask);
    return res.json({ ...answer, ...(await relayed) });
  });
  return r;
}

/** A slot at the receiver's now, named by the job, the step and the seal's time (a replay: the same slot). */
const reserve = (breakers: Breakers, caps: BreakerCaps, ask: Extract<BreakerAsk, { op: 'reserve' }>, seal: Seal) =>
  breakers.reserveDestructive(caps, { node: ask.node, jobId: ask.jobId, stepId: ask.stepId, askedAt: seal.iat });

/** A job started on the node: counted towards the storm breaker at the receiver's now. */
async function activity(breakers: Breakers, caps: BreakerCaps, ask: Extract<BreakerAsk, { op: 'activity' }>) {
  const tripped = await breakers.recordNodeActivity(caps, ask.node, ask.source);
  return tripped ? { tripped } : {};
}
