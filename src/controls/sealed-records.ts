import type { z } from 'zod';
import type { Keyring } from '../trust/keyring.ts';
import { verifySeal, type Seal, type Sealer, type Untrusted } from '../trust/seal.ts';

// Operator controls an agent acts on (mode overrides, pauses, approval decisions) are sealed by
// the receiver when it writes them (the API is the only writer), and verified by every reader
// that acts on them. A record without a valid seal is ignored, as if absent, and reported: a
// write straight into Redis changes nothing. Seals are bound to the record's field (a sealed
// override of one runbook is not valid for another) and carry their own time; within a process
// a record older than one already seen for the same field, or one seen again after its field was
// cleared, is a replay and is ignored too.

export type ControlKind = 'mode' | 'pause' | 'approval';

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
}

/** Mode overrides and pauses stand until changed; the seal's expiry only bounds a replay's age. */
export const CONTROL_SEAL_TTL_MS = 365 * 86_400_000;

const subject = (kind: ControlKind, field: string): string => `${kind}/${field}`;

/** The stored JSON of `record` for `field`, sealed when the trust has a sealer, and the seal's time. */
export function sealRecord(trust: ControlTrust | undefined, kind: ControlKind, field: string, record: object, opts: { ttlMs?: number; notBefore?: number } = {}): { json: string; iat?: number } {
  const sealer = trust?.sealer;
  if (!sealer) return { json: JSON.stringify(record) };
  const seal = sealer.seal('control', subject(kind, field), record, opts.ttlMs ?? CONTROL_SEAL_TTL_MS, opts.notBefore);
  return { json: JSON.stringify({ ...record, seal }), iat: seal.iat };
}

/** The field of the seal-time hash (keys.sealedAt) for a record. */
export const sealedAtField = subject;

interface Seen {
  iat: number;
  mac: string;
  cleared: boolean;
}

/** Reads sealed records for one process, remembering the newest seal seen per field. */
export class SealedRecords {
  readonly trust: ControlTrust | undefined;
  readonly #seen = new Map<string, Seen>();

  constructor(trust: ControlTrust | undefined) {
    this.trust = trust;
  }

  /** The record stored for `field` when it parses and (if this reader verifies) its seal holds. */
  open<T>(schema: z.ZodType<T>, kind: ControlKind, field: string, text: string | null | undefined): T | undefined {
    const key = subject(kind, field);
    if (!text) {
      const s = this.#seen.get(key);
      if (s) s.cleared = true;
      return undefined;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
    const { seal, ...body } = raw as Record<string, unknown>;
    const parsed = schema.safeParse(body);
    if (!parsed.success) return undefined;
    const t = this.trust;
    if (!t?.ring) return parsed.data;
    const v = verifySeal(t.ring, 'control', key, body, seal, (t.now ?? Date.now)());
    if (!v.ok) {
      if (v.reason === 'unsigned' && t.allowUnsigned) return parsed.data;
      return this.#untrusted(kind, field, v.reason, v.detail);
    }
    if (v.seal.iss !== 'receiver') return this.#untrusted(kind, field, 'wrong-issuer', `sealed by ${v.seal.iss}: controls are the API's (the receiver's) to write`);
    if (kind !== 'approval' && !this.#fresh(key, v.seal)) {
      return this.#untrusted(kind, field, 'replayed', `a record sealed at ${new Date(v.seal.iat).toISOString()} is older than, or was cleared after, one already seen for ${key}`);
    }
    return parsed.data;
  }

  #fresh(key: string, seal: Seal): boolean {
    const s = this.#seen.get(key);
    if (!s || seal.iat > s.iat) {
      this.#seen.set(key, { iat: seal.iat, mac: seal.mac, cleared: false });
      return true;
    }
    return seal.iat === s.iat && seal.mac === s.mac && !s.cleared;
  }

  #untrusted(kind: ControlKind, field: string, reason: Untrusted, detail: string): undefined {
    this.trust?.onUntrusted?.({ kind, field, reason, detail });
    return undefined;
  }
}
