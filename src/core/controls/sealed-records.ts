import { z } from '../zod.ts';
import type { Keyring } from '../trust/keyring.ts';
import { Seal, verifySeal, type Sealer, type Untrusted } from '../trust/seal.ts';

// Operator controls an agent acts on (mode overrides, pauses, approval decisions) are sealed by
// the receiver when it writes them (the API is the only writer), and verified by every reader
// that acts on them. A record without a valid seal is ignored and reported: a write straight into
// Redis changes nothing. Seals are bound to the record's field (a sealed override of one runbook
// is not valid for another).
//
// Decisions do not come back from the dead. Every mode and pause record carries a generation
// (`gen`, sealed with it: the API's clock in ms, forced above the field's last one), clearing is a
// sealed tombstone rather than a delete, and a reader keeps, per field, the newest record it
// accepted (in STATE_DIR for the workers, ControlMemory), across restarts. An older generation
// put back (a replay), a field deleted, or a record that no longer verifies leaves the reader on
// the newest decision it knows instead of falling back to configuration. Seals are short-lived
// (CONTROL_SEAL_TTL_MS) and the receiver seals standing records again while they stand, so a
// record captured before a change is worthless minutes later even to a reader that never saw the
// change; an authentic record whose seal lapsed (no receiver for a while) still counts when it
// holds work back (a pause, dry-run), never when it lets work run (enforce).

export type ControlKind = 'mode' | 'pause' | 'approval';

/** A reader's newest accepted record of a field: its generation and stored text. */
export interface Known {
  gen: number;
  text: string;
}

/** Where a reader keeps what it accepted (a file in STATE_DIR for the workers); default: memory. */
export interface ControlMemory {
  load(): Map<string, Known>;
  save(known: ReadonlyMap<string, Known>): void;
}

export interface UntrustedControl {
  kind: ControlKind;
  field: string;
  reason: Untrusted;
  detail: string;
}

export interface ControlTrust {
  /** The writer (the receiver) seals what it writes. */
  sealer?: Sealer;
  /** Readers that act on records verify them with these keys (the receiver's role). */
  ring?: Keyring;
  /** ALLOW_UNSIGNED_WORK: a record without a seal is taken (a bad seal is still not). */
  allowUnsigned: boolean;
  onUntrusted?: (u: UntrustedControl) => void;
  now?: () => number;
  /** What this reader accepted, kept across restarts (default: this process's memory). */
  memory?: ControlMemory;
  /**
   * Audit entries (src/core/controls/audit-seal.ts): `sealer` numbers and seals what this process writes
   * (its work key of the list's scope); `roots` (the receiver's) check every list when read.
   */
  audit?: { sealer?: Sealer; roots?: Keyring };
}

/**
 * How long a mode or pause seal is valid. The receiver seals standing records again every
 * CONTROL_RESEAL_MS (src/adapters/controls/controls-store.ts resealStanding), long before they lapse.
 */
export const CONTROL_SEAL_TTL_MS = 15 * 60_000;
export const CONTROL_RESEAL_MS = 5 * 60_000;

/** A cleared mode override or a lifted pause: sealed like a record, so a delete is never the clear. */
const Tombstone = z.lazy(() =>
  z.object({
    cleared: z.literal(true),
    by: z.string(),
    why: z._default(z.string(), ''),
    at: z.string(),
    gen: z.number().check(z.int(), z.nonnegative()),
  }),
);

const genOf = (body: Record<string, unknown>): number =>
  typeof body['gen'] === 'number' && Number.isSafeInteger(body['gen']) && body['gen'] >= 0 ? body['gen'] : 0;

/** A record that, honoured late, can only hold work back: a pause, a dry-run override. */
const restrictive = (kind: ControlKind, body: Record<string, unknown>): boolean =>
  kind === 'pause' ? body['cleared'] !== true : kind === 'mode' ? body['mode'] === 'dry-run' : false;

const subject = (kind: ControlKind, field: string): string => `${kind}/${field}`;

/** The stored JSON of `record` for `field`, sealed when the trust has a sealer, and the seal's time. */
export function sealRecord(
  trust: ControlTrust | undefined,
  kind: ControlKind,
  field: string,
  record: object,
  opts: { ttlMs?: number; notBefore?: number } = {},
): { json: string; iat?: number } {
  const sealer = trust?.sealer;
  if (!sealer) return { json: JSON.stringify(record) };
  const seal = sealer.seal('control', subject(kind, field), record, opts.ttlMs ?? CONTROL_SEAL_TTL_MS, opts.notBefore);
  return { json: JSON.stringify({ ...record, seal }), iat: seal.iat };
}

/** The field of the seal-time hash (keys.sealedAt) for a record. */
export const sealedAtField = subject;

/** Reads sealed records for one process, keeping the newest accepted record per field. */
export class SealedRecords {
  readonly trust: ControlTrust | undefined;
  readonly #memory: ControlMemory | undefined;
  #known: Map<string, Known> | undefined;
  /** Per field, the stored text whose seal this process checked last (not what a memory file says). */
  readonly #checked = new Map<string, string>();

  constructor(trust: ControlTrust | undefined) {
    this.trust = trust;
    this.#memory = trust?.memory;
  }

  #knownMap(): Map<string, Known> {
    return (this.#known ??= this.#memory?.load() ?? new Map());
  }

  /**
   * The record standing for `field`: the stored one when it parses and (if this reader verifies)
   * its seal holds and it is not older than what this reader accepted before; otherwise, for
   * modes and pauses, the newest record accepted before. Undefined: none (or a tombstone).
   */
  open<T>(schema: z.ZodMiniType<T>, kind: ControlKind, field: string, text: string | null | undefined): T | undefined {
    const key = subject(kind, field);
    const t = this.trust;
    const remembers = kind !== 'approval' && t?.ring !== undefined;
    // The very record whose seal this process checked before, with the keys it still holds: it
    // stands as remembered, lapse rules included, without a second signature check (readers open
    // the same few records at every job start and step; the receiver at every relay).
    if (remembers && text && this.#checked.get(key) === text) {
      const known = this.#knownMap().get(key);
      if (known?.text === text) return this.#standing(schema, kind, text);
    }
    const body = splitSealed(text);
    if (!body) {
      if (!remembers) return undefined;
      const known = this.#knownMap().get(key);
      if (text) this.#untrusted(kind, field, 'malformed', 'the record does not parse; the newest accepted record stands');
      else if (known && !Tombstone.safeParse(splitSealed(known.text)?.body).success)
        this.#untrusted(kind, field, 'removed', 'the record was deleted, not cleared through the API; the newest accepted record stands');
      return this.#fallBack(schema, kind, key);
    }
    const parsed = body.body['cleared'] === true ? Tombstone.safeParse(body.body) : schema.safeParse(body.body);
    if (!parsed.success) return remembers ? this.#fallBack(schema, kind, key) : undefined;
    if (!t?.ring) return body.body['cleared'] === true ? undefined : (parsed.data as T);
    const v = this.#verify(t.ring, kind, field, body);
    if (v !== 'ok') {
      if (v === 'unsigned' && t.allowUnsigned) return body.body['cleared'] === true ? undefined : (parsed.data as T);
      return remembers ? this.#fallBack(schema, kind, key) : undefined;
    }
    if (remembers) {
      const gen = genOf(body.body);
      const known = this.#knownMap().get(key);
      if (known && gen < known.gen) {
        this.#untrusted(
          kind,
          field,
          'replayed',
          `generation ${gen} is older than ${known.gen}, already accepted for ${key}; the newest accepted record stands`,
        );
        return this.#standing(schema, kind, known.text);
      }
      if (!known || gen > known.gen || known.text !== text) this.#remember(key, { gen, text: text! });
      this.#checked.set(key, text!);
    }
    return body.body['cleared'] === true ? undefined : (parsed.data as T);
  }

  /**
   * A record relayed by the receiver (src/core/controls/control-relay.ts): taken as the newest of
   * its field when its seal holds (as open checks it) and its generation is newer than what this
   * reader accepted; from then on an older record read from Redis is a replay. An older or lapsed
   * relayed record changes nothing and is no alarm (a receiver replica that has not read a change
   * yet); one whose seal does not hold is reported. True when it was taken.
   */
  learn<T>(schema: z.ZodMiniType<T>, kind: ControlKind, field: string, text: string): boolean {
    const t = this.trust;
    if (kind === 'approval' || !t?.ring) return false;
    // The record this reader already stands on (checked when it was accepted): nothing new.
    if (this.#knownMap().get(subject(kind, field))?.text === text) return false;
    const body = splitSealed(text);
    const parsed = body && (body.body['cleared'] === true ? Tombstone.safeParse(body.body) : schema.safeParse(body.body));
    if (!body || !parsed?.success) {
      this.#untrusted(kind, field, 'malformed', 'a record relayed by the receiver does not parse; ignored');
      return false;
    }
    if (this.#verify(t.ring, kind, field, body) !== 'ok') return false;
    const key = subject(kind, field);
    const gen = genOf(body.body);
    const known = this.#knownMap().get(key);
    if (known && gen <= known.gen) return false;
    this.#remember(key, { gen, text });
    this.#checked.set(key, text);
    return true;
  }

  /** The generation of the newest record of `field` this reader accepted (undefined: none). */
  newestGen(kind: ControlKind, field: string): number | undefined {
    return this.#knownMap().get(subject(kind, field))?.gen;
  }

  /** The stored text of the newest record of `field` this reader accepted, to relay (undefined: none). */
  newestText(kind: ControlKind, field: string): string | undefined {
    return this.#knownMap().get(subject(kind, field))?.text;
  }

  /**
   * Whether `body` carries the API's valid seal for `field`: 'ok', or why not (reported, except a
   * lapse, which is authentic, and a missing seal, which the caller may take). A lapsed seal on a
   * record that can only hold work back (a pause, dry-run) still holds.
   */
  #verify(ring: Keyring, kind: ControlKind, field: string, body: { body: Record<string, unknown>; seal: unknown }): 'ok' | Untrusted {
    const key = subject(kind, field);
    let v = verifySeal(ring, 'control', key, body.body, body.seal, (this.trust?.now ?? Date.now)());
    if (!v.ok && v.reason === 'expired' && restrictive(kind, body.body)) {
      // Authentic but lapsed (no receiver re-sealed it): it still holds work back.
      const at = Seal.safeParse(body.seal);
      if (at.success) v = verifySeal(ring, 'control', key, body.body, body.seal, at.data.iat);
    }
    if (!v.ok) {
      // A lapsed seal is authentic (the MAC is checked first): no receiver sealed it again in
      // time, or an old copy was put back. Either way it lets no work run; not an alarm.
      if (v.reason !== 'expired' && !(v.reason === 'unsigned' && this.trust?.allowUnsigned)) this.#untrusted(kind, field, v.reason, v.detail);
      return v.reason;
    }
    if (v.seal.iss !== 'receiver') {
      this.#untrusted(kind, field, 'wrong-issuer', `sealed by ${v.seal.iss}: controls are the API's (the receiver's) to write`);
      return 'wrong-issuer';
    }
    return 'ok';
  }

  #fallBack<T>(schema: z.ZodMiniType<T>, kind: ControlKind, key: string): T | undefined {
    const known = this.#knownMap().get(key);
    return known ? this.#standing(schema, kind, known.text) : undefined;
  }

  /**
   * A remembered record (its seal verified when it was accepted): the record while its seal
   * holds, or past that when it is restrictive; undefined for a tombstone or a lapsed enforce
   * (what lapsed is no decision any more, and never one a replay may bring back).
   */
  #standing<T>(schema: z.ZodMiniType<T>, kind: ControlKind, text: string): T | undefined {
    const b = splitSealed(text);
    if (!b || b.body['cleared'] === true) return undefined;
    const seal = Seal.safeParse(b.seal);
    const now = (this.trust?.now ?? Date.now)();
    if (seal.success && now > seal.data.exp && !restrictive(kind, b.body)) return undefined;
    const r = schema.safeParse(b.body);
    return r.success ? r.data : undefined;
  }

  #remember(key: string, k: Known): void {
    const m = this.#knownMap();
    m.set(key, k);
    this.#memory?.save(m);
  }

  #untrusted(kind: ControlKind, field: string, reason: Untrusted, detail: string): void {
    this.trust?.onUntrusted?.({ kind, field, reason, detail });
  }
}

/** A stored control record's JSON split into the record and its seal; undefined when it is no JSON object. */
export function splitSealed(text: string | null | undefined): { body: Record<string, unknown>; seal: unknown } | undefined {
  if (!text) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const { seal, ...body } = raw as Record<string, unknown>;
  return { body, seal };
}
