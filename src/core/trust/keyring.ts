import type { KeyObject } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { QueueGenerations } from './key-generations.ts';
import { KeyId, Role, type Role as RoleT } from './roles.ts';

// Signing keys come from a directory (a mounted Kubernetes Secret): one file per key, named
// `<role>.<key id>`, holding at least 32 random bytes in base64 (`openssl rand -base64 32`).
// A process seals with one key of its own role and verifies with every key it has, so rotation
// is: add the new key everywhere, then make issuers use it (SIGNING_KEY_ID, or it is the
// greatest key id of the role), then remove the old one once work sealed with it has expired.
// Key bytes are never logged or put in an error message; only `<role>.<key id>` is.

export class KeyringError extends Error {
  override name = 'KeyringError';
}

interface SigningKey {
  role: RoleT;
  kid: string;
  key: Buffer;
}

export interface Keyring {
  /** The key this process seals with, when it has one of its role. */
  signing?: SigningKey;
  /** `<role>.<kid>` -> key. */
  verify: ReadonlyMap<string, Buffer>;
  /** `<role>.<kid>` -> public key, for `es256` seals (operator controls, src/core/trust/control-keys.ts). */
  publicKeys?: ReadonlyMap<string, KeyObject>;
  /**
   * Set when the keys are not roots but the work keys of this one queue (an enrolled consumer,
   * src/core/trust/work-keys.ts): they check and seal work on that queue and nothing else.
   */
  scope?: string;
  /**
   * Roots only (no scope): the generation each queue's work keys are derived at (a revoked
   * node's, src/core/trust/key-generations.ts); absent, every queue's is 0.
   */
  generations?: QueueGenerations;
}

const MIN_KEY_BYTES = 32;

/** Every `<role>.<kid>` key in `dir` (Kubernetes Secret volumes also hold `..data` links: skipped). */
export function readKeys(dir: string): Map<string, Buffer> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw new KeyringError(`SIGNING_KEYS_DIR: cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const keys = new Map<string, Buffer>();
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const dot = name.indexOf('.');
    const role = Role.safeParse(name.slice(0, dot));
    const kid = KeyId.safeParse(name.slice(dot + 1));
    if (dot < 0 || !role.success || !kid.success)
      throw new KeyringError(`SIGNING_KEYS_DIR: ${name} is not named <role>.<key id> (roles: ${Role.options.join(', ')})`);
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    const text = readFileSync(path, 'utf8').trim();
    const key = Buffer.from(text, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length < MIN_KEY_BYTES) {
      throw new KeyringError(`SIGNING_KEYS_DIR: ${name} must hold at least ${MIN_KEY_BYTES} bytes in base64 (openssl rand -base64 32)`);
    }
    keys.set(name, key);
  }
  return keys;
}

/**
 * The keyring of a process of `role`. `keyId` picks the sealing key (SIGNING_KEY_ID); without it
 * the greatest key id of the role seals (name keys by date: `receiver.2026-12`).
 */
export function keyringFor(role: RoleT, keys: ReadonlyMap<string, Buffer>, keyId?: string): Keyring {
  const own = [...keys.keys()]
    .filter((n) => n.startsWith(`${role}.`))
    .map((n) => n.slice(role.length + 1))
    .sort();
  const kid = keyId ?? own.at(-1);
  if (keyId !== undefined && !own.includes(keyId))
    throw new KeyringError(`SIGNING_KEY_ID: no key ${role}.${keyId} (have: ${own.map((k) => `${role}.${k}`).join(', ') || 'none'})`);
  return { ...(kid !== undefined ? { signing: { role, kid, key: keys.get(`${role}.${kid}`)! } } : {}), verify: keys };
}
