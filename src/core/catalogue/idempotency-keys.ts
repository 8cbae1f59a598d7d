import { hash } from '../node-crypto.ts';

// Idempotency keys come from the event's identity, never the clock (docs/jobs.md, "Idempotency").
// A key is also the BullMQ job id, so it must not contain ':' and must not look like an integer.
// Shape: <prefix>_<readable parts>_<12 hex of the exact identity>. The readable part is for
// humans and may be lossy (sanitised, truncated); the hash keeps distinct identities distinct.

const UNSAFE = /[^A-Za-z0-9._-]+/g;

export function idempotencyKey(prefix: string, parts: readonly string[]): string {
  // crypto.hash: the one-shot form, no Hash object per key (the receiver makes one per alert).
  const digest = hash('sha256', JSON.stringify([prefix, ...parts]), 'hex').slice(0, 12);
  const readable = parts
    .map((p) => p.replace(UNSAFE, '-').replace(/^-+|-+$/g, ''))
    .filter((p) => p.length > 0)
    .join('_')
    .slice(0, 120);
  return readable ? `${prefix}_${readable}_${digest}` : `${prefix}_${digest}`;
}

/** What BullMQ accepts as a custom job id, and what our keys always satisfy. */
export const JOB_ID = /^[A-Za-z][A-Za-z0-9._-]{0,199}$/;
