import { createHmac, timingSafeEqual, verify } from '../node-crypto.ts';
import { z } from '../zod.ts';
import { sealedBytes } from './encoding.ts';
import type { Keyring } from './keyring.ts';
import { Role, SealKeyId } from './roles.ts';
import { atGeneration } from './key-generations.ts';
import { workKeyOf } from './work-keys.ts';

// A seal: HMAC-SHA256 over the JSON encoding (encoding.ts) of what it vouches for (its purpose, the
// subject it is bound to — a queue and job id, a control field — the value itself, and the
// seal's own issuer, key id, issue time and expiry). Moving a sealed value to another subject,
// changing one byte of it, or re-dating it breaks the MAC.

export const Seal = z.lazy(() =>
  z.object({
    v: z.literal(1),
    iss: Role,
    kid: SealKeyId,
    /** Issued at, epoch ms. */
    iat: z.number().check(z.int(), z.nonnegative()),
    /** Not valid after, epoch ms. */
    exp: z.number().check(z.int(), z.nonnegative()),
    /**
     * How `mac` was made: absent, HMAC-SHA256 with the issuer's shared key; `es256`, an ECDSA P-256
     * signature (IEEE P1363, 64 bytes) that only the holder of the private key can make and anyone
     * with the public key can check (operator controls: src/core/trust/control-keys.ts).
     */
    alg: z.optional(z.literal('es256')),
    mac: z.string().check(z.regex(/^([A-Za-z0-9_-]{43}|[A-Za-z0-9_-]{86})$/, 'a base64url HMAC-SHA256 or ECDSA P-256 signature')),
  }),
);
export type Seal = z.infer<typeof Seal>;

/** What a seal is for: the same bytes sealed as a job are not a valid control record or audit entry. */
export type Purpose = 'job' | 'control' | 'audit' | 'breaker';

/** Refusal reasons, also the `reason` label of volume_medic_untrusted_refused_total. */
export type Untrusted = 'unsigned' | 'malformed' | 'unknown-key' | 'bad-mac' | 'not-yet-valid' | 'expired' | 'wrong-issuer' | 'replayed' | 'removed';

export type Verdict = { ok: true; seal: Seal } | { ok: false; reason: Untrusted; detail: string };

/** How far an issuer's clock may run ahead of the verifier's. */
const CLOCK_SKEW_MS = 60_000;

/** A seal's head as it is covered: the fields that say who, when and for what. */
export type SealHead = Omit<Seal, 'mac' | 'alg'>;

/** The first line of what a seal covers (then a newline, then sealedBytes of the value). */
const headLine = (purpose: Purpose, subject: string, s: SealHead): string => JSON.stringify([s.v, purpose, subject, s.iss, s.kid, s.iat, s.exp]);

/** What a seal covers: its own head, the purpose and subject, then `encoded` (sealedBytes of the value). */
export const sealedInput = (purpose: Purpose, subject: string, encoded: string, s: SealHead): string => `${headLine(purpose, subject, s)}\n${encoded}`;

/** sealedInput's HMAC, fed in parts (the receiver seals every job: no concatenated copy). */
const macOf = (key: Buffer, purpose: Purpose, subject: string, encoded: string, s: SealHead): string =>
  createHmac('sha256', key)
    .update(headLine(purpose, subject, s), 'utf8')
    .update('\n', 'utf8')
    .update(encoded, 'utf8')
    .digest('base64url');

export interface Sealer {
  readonly role: Role;
  /** `notBefore`: the seal's issue time is at least this (a later record of a field always seals later, whatever the clocks of several writers). */
  seal(purpose: Purpose, subject: string, value: unknown, ttlMs: number, notBefore?: number): Seal;
  /**
   * `seal` of a value given as its encoding (`sealedBytes(value)`, which the caller has made
   * anyway: the receiver stores that same text, src/core/trust/work.ts), so it is encoded once.
   */
  sealEncoded(purpose: Purpose, subject: string, encoded: string, ttlMs: number, notBefore?: number): Seal;
  /**
   * The sealer of work put on `queue`, with that queue's work key (src/core/trust/work-keys.ts); absent
   * on a sealer that cannot seal work (the control key). Throws for a queue this process holds no
   * key of (an enrolled agent seals for its own queue only).
   */
  workFor?(queue: string): Sealer;
}

/**
 * A Sealer for `iss`/`kid` whose `mac` comes from `macFor` over the seal's head and the value's
 * encoding (an HMAC here; an ECDSA signature for operator controls, src/core/trust/control-keys.ts).
 */
export function makeSealer(
  iss: Role,
  kid: string,
  macFor: (purpose: Purpose, subject: string, encoded: string, head: SealHead) => string,
  now: () => number = Date.now,
  alg?: Seal['alg'],
): Sealer {
  const sealEncoded = (purpose: Purpose, subject: string, encoded: string, ttlMs: number, notBefore = 0): Seal => {
    const iat = Math.max(now(), notBefore);
    const head = { v: 1 as const, iss, kid, iat, exp: iat + ttlMs };
    const mac = macFor(purpose, subject, encoded, head);
    return alg ? { ...head, alg, mac } : { ...head, mac };
  };
  return {
    role: iss,
    seal: (purpose, subject, value, ttlMs, notBefore) => sealEncoded(purpose, subject, sealedBytes(value), ttlMs, notBefore),
    sealEncoded,
  };
}

/**
 * The sealer of a keyring with a signing key; undefined without one. Its `workFor` derives each
 * queue's work key from the signing root once per generation of the queue (ring.generations) and
 * keeps the queue's sealer for the process's life (one entry per queue written to: a node count);
 * with an enrolled ring it is the ring's own queue only.
 */
export function sealerOf(ring: Keyring, now: () => number = Date.now): Sealer | undefined {
  const k = ring.signing;
  if (!k) return undefined;
  const withKey = (key: Buffer, kid = k.kid): Sealer =>
    makeSealer(k.role, kid, (purpose, subject, encoded, head) => macOf(key, purpose, subject, encoded, head), now);
  const sealer = withKey(k.key);
  const scope = ring.scope;
  if (scope !== undefined) {
    sealer.workFor = (queue) => {
      if (queue !== scope) throw new Error(`this process holds the work key of queue ${scope} only, not ${queue}`);
      return sealer;
    };
    return sealer;
  }
  // At the queue's current generation (a revoked node's keys are of a later one), named for it.
  const byQueue = new Map<string, { generation: number; sealer: Sealer }>();
  sealer.workFor = (queue) => {
    const generation = ring.generations?.of(queue) ?? 0;
    let s = byQueue.get(queue);
    if (s?.generation !== generation)
      byQueue.set(queue, (s = { generation, sealer: withKey(workKeyOf(k.key, k.role, queue, generation), atGeneration(k.kid, generation)) }));
    return s.sealer;
  };
  return sealer;
}

/** Checks the MAC and the validity window; who may issue what is the caller's policy. */
export function verifySeal(ring: Keyring, purpose: Purpose, subject: string, value: unknown, raw: unknown, now: number): Verdict {
  if (raw === undefined || raw === null) return { ok: false, reason: 'unsigned', detail: 'no seal' };
  const parsed = Seal.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: 'malformed', detail: `seal does not parse: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
  const s = parsed.data;
  if (s.alg === 'es256') {
    const pub = ring.publicKeys?.get(`${s.iss}.${s.kid}`);
    if (!pub) return { ok: false, reason: 'unknown-key', detail: `no public key ${s.iss}.${s.kid}` };
    let good: boolean;
    try {
      good = verify(
        'sha256',
        Buffer.from(sealedInput(purpose, subject, sealedBytes(value), s), 'utf8'),
        { key: pub, dsaEncoding: 'ieee-p1363' },
        Buffer.from(s.mac, 'base64url'),
      );
    } catch (err) {
      return { ok: false, reason: 'malformed', detail: (err as Error).message };
    }
    if (!good) return { ok: false, reason: 'bad-mac', detail: `signature ${s.iss}.${s.kid} does not match the content` };
  } else {
    const key = ring.verify.get(`${s.iss}.${s.kid}`);
    if (!key) return { ok: false, reason: 'unknown-key', detail: `no key ${s.iss}.${s.kid}` };
    let expected: Buffer;
    try {
      expected = Buffer.from(macOf(key, purpose, subject, sealedBytes(value), s), 'base64url');
    } catch (err) {
      return { ok: false, reason: 'malformed', detail: (err as Error).message };
    }
    const given = Buffer.from(s.mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { ok: false, reason: 'bad-mac', detail: `seal ${s.iss}.${s.kid} does not match the content` };
  }
  if (s.iat > now + CLOCK_SKEW_MS) return { ok: false, reason: 'not-yet-valid', detail: `issued at ${new Date(s.iat).toISOString()}, in the future` };
  if (now > s.exp) return { ok: false, reason: 'expired', detail: `expired at ${new Date(s.exp).toISOString()}` };
  return { ok: true, seal: s };
}
