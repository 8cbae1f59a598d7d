import type { Logger } from '../../src/adapters/observability/logger.ts';
import type { Keyring } from '../../src/core/trust/keyring.ts';
import { ringOfAnswer, type EnrolAnswer, type EnrolRequest } from '../../src/core/trust/enrolment-wire.ts';
import { sealerOf, type Sealer } from '../../src/core/trust/seal.ts';
import { enrolOnce, EnrolError, type EnrolTarget } from './enrolment-client.ts';

// The keys an enrolled consumer holds: its own queue's work keys, kept fresh. `ring` and `sealer`
// are live views: whoever holds them sees the keys of the latest enrolment, so a renewal (a root
// rotated on the receiver) needs no restart. Renewal runs every renewAfterSeconds (jittered), and
// soon after a job arrives sealed with a key this process does not hold; a failed renewal keeps
// the keys it has and tries again with backoff.

export interface EnrolledKeys {
  readonly ring: Keyring;
  /** Seals this consumer's own work (a node agent's checks); undefined when the answer names no signing key. */
  readonly sealer: Sealer | undefined;
  /** The node's own Redis user from the latest enrolment, when the receiver manages them. */
  redis(): EnrolAnswer['redis'];
  /** Ask for a renewal soon (a seal named a key this process does not hold); at most once a minute. */
  renewSoon(): void;
  close(): void;
}

export interface EnrolOptions {
  target: EnrolTarget;
  request: EnrolRequest;
  log: Logger;
  /** Called when a renewal hands out another Redis password (the connection must be made again). */
  onRedisChanged?: () => void;
  /** Test seam: the round trip (default enrolOnce). */
  enrol?: (t: EnrolTarget, r: EnrolRequest) => Promise<EnrolAnswer>;
  sleep?: (ms: number) => Promise<void>;
}

const RETRY_BASE_MS = 1_000;
const RETRY_CAP_MS = 60_000;
const RENEW_SOON_MIN_MS = 60_000;

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Enrols, retrying with capped backoff until the receiver answers (a starting fleet may find it not ready yet). */
export async function enrolUntilDone(o: EnrolOptions): Promise<EnrolledKeys> {
  const enrol = o.enrol ?? enrolOnce;
  const sleep = o.sleep ?? defaultSleep;
  let answer: EnrolAnswer | undefined;
  for (let attempt = 0; !answer; attempt++) {
    try {
      answer = await enrol(o.target, o.request);
    } catch (err) {
      const wait = Math.round(Math.random() * Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** attempt));
      o.log.error(
        { err: (err as Error).message, status: err instanceof EnrolError ? err.status : undefined, retryInMs: wait },
        'enrolment failed; this process runs nothing until it has its keys',
      );
      await sleep(wait);
    }
  }
  o.log.info({ queue: answer.queue, keys: Object.keys(answer.keys), redisUser: answer.redis?.username }, 'enrolled');
  return liveKeys(o, answer);
}

function liveKeys(o: EnrolOptions, first: EnrolAnswer): EnrolledKeys {
  const enrol = o.enrol ?? enrolOnce;
  let answer = first;
  let ring = ringOfAnswer(first);
  let sealer = sealerOf(ring);
  let timer: NodeJS.Timeout | undefined;
  let lastSoon = 0;
  let closed = false;
  let failures = 0;

  const schedule = (ms: number): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void renew(), ms);
    timer.unref();
  };
  const renew = async (): Promise<void> => {
    try {
      const next = await enrol(o.target, o.request);
      const redisChanged = next.redis?.password !== answer.redis?.password;
      const keysChanged = JSON.stringify(next.keys) !== JSON.stringify(answer.keys);
      answer = next;
      ring = ringOfAnswer(next);
      sealer = sealerOf(ring);
      failures = 0;
      if (keysChanged) o.log.info({ queue: next.queue, keys: Object.keys(next.keys) }, 'enrolled again: work keys changed');
      if (redisChanged) o.onRedisChanged?.();
      schedule(next.renewAfterSeconds * 1000 * (0.9 + Math.random() * 0.2));
    } catch (err) {
      failures++;
      const wait = Math.round(Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** failures) * (0.5 + Math.random() / 2));
      o.log.warn({ err: (err as Error).message, retryInMs: wait }, 'enrolling again failed; keeping the keys held');
      schedule(wait);
    }
  };
  schedule(first.renewAfterSeconds * 1000 * (0.9 + Math.random() * 0.2));

  const liveRing: Keyring = {
    get verify() {
      return ring.verify;
    },
    get signing() {
      return ring.signing;
    },
    get scope() {
      return ring.scope;
    },
  };
  const current = (): Sealer => {
    if (!sealer) throw new Error('this enrolment handed out no signing key');
    return sealer;
  };
  const liveSealer: Sealer | undefined = sealer
    ? {
        get role() {
          return current().role;
        },
        seal: (...a) => current().seal(...a),
        sealEncoded: (...a) => current().sealEncoded(...a),
        workFor: (queue) => current().workFor!(queue),
      }
    : undefined;
  return {
    ring: liveRing,
    sealer: liveSealer,
    redis: () => answer.redis,
    renewSoon: () => {
      const now = Date.now();
      if (closed || now - lastSoon < RENEW_SOON_MIN_MS) return;
      lastSoon = now;
      schedule(1_000 + Math.random() * 4_000);
    },
    close: () => {
      closed = true;
      clearTimeout(timer);
    },
  };
}
