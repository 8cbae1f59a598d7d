import { z } from '../zod.ts';
import { JOB_ID } from '../catalogue/idempotency-keys.ts';
import { NodeName } from '../catalogue/names.ts';
import { Seal } from '../trust/seal.ts';
import { TripRecord } from './records.ts';

// How an enrolled node agent asks the receiver to take a breaker slot, or to count a job start the
// receiver did not count when it stored the job (the agent's own work, an operator's retry, a start
// long after the store). src/control/http/routes/breaker-slots.ts does it, as its own Redis user: a
// node's own Redis user may not write the breakers' keys, where it could trip or clear a breaker
// for the whole fleet. The request is sealed with the node's work key of its queue (only that node and the receiver hold
// it), for a minute; the node is the one the seal proves, and the receiver's own caps apply.

export const BREAKER_SLOTS_PATH = '/v1/agents/breakers';

/** How long a request's seal holds: a captured one replays within this at most, and then takes no new slot. */
export const BREAKER_SEAL_TTL_MS = 60_000;

export const BreakerAsk = z.lazy(() =>
  z.discriminatedUnion('op', [
    /** Before a destructive step: take a slot in the node's and the cluster's windows. */
    z.object({
      op: z.literal('reserve'),
      node: NodeName,
      jobId: z.string().check(z.regex(JOB_ID)),
      stepId: z.string().check(z.minLength(1), z.maxLength(100), z.regex(/^[A-Za-z0-9._:/-]+$/)),
    }),
    /** A job started on the node: count the node towards the storm breaker, naming what sent the signal. */
    z.object({
      op: z.literal('activity'),
      node: NodeName,
      source: z.optional(z.string().check(z.maxLength(40), z.regex(/^[a-z0-9-]*$/))),
    }),
  ]),
);
export type BreakerAsk = z.infer<typeof BreakerAsk>;

export const SealedBreakerAsk = z.lazy(() => z.object({ ask: BreakerAsk, seal: Seal }));

/** The seal's subject: the queue whose work key seals it. */
export const breakerSubject = (queue: string): string => `breaker/${queue}`;

export const ReserveAnswer = z.lazy(() =>
  z.union([
    z.object({ ok: z.literal(true), nodeCount: z.number(), clusterCount: z.number(), tripped: z.array(TripRecord) }),
    z.object({ ok: z.literal(false), blockedBy: TripRecord }),
  ]),
);
export const ActivityAnswer = z.lazy(() => z.object({ tripped: z.optional(TripRecord) }));
