import { z } from '../zod.ts';

// Who may issue work. Each process seals with its own role's key, and verifiers know every
// role's keys (HMAC: a verifier could also seal; see docs/threat-model.md for what that means).

export const ROLES = ['receiver', 'cluster-worker', 'node-agent'] as const;
export const Role = z.enum(ROLES);
export type Role = z.infer<typeof Role>;

/** A key id: what follows `<role>.` in the key file's name. */
export const KeyId = z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/, 'a key id is 1-64 letters, digits, _ or -'));

/**
 * The key id a seal names: a key file's id, or a queue key's of a generation above 0
 * (`<kid>.g<n>`, src/core/trust/key-generations.ts).
 */
export const SealKeyId = z
  .string()
  .check(z.regex(/^[A-Za-z0-9_-]{1,64}(\.g[1-9][0-9]{0,9})?$/, 'a key id is 1-64 letters, digits, _ or -, then maybe .g<generation>'));
