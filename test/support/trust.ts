import { writeSigningKeys } from '../../scripts/lib/signing-keys.ts';
import { keyringFor, readKeys } from '../../src/core/trust/keyring.ts';
import type { Role } from '../../src/core/trust/roles.ts';
import { sealerOf, type Sealer } from '../../src/core/trust/seal.ts';

// Signing keys for tests: one directory per test process with a key of every role, the way a
// deployment mounts them (`<role>.<key id>`, base64). testConfig points SIGNING_KEYS_DIR here, so
// receivers seal and agents verify exactly as in production.

export const writeKeysDir = (roles: readonly Role[] = ['receiver', 'cluster-worker', 'node-agent'], kid = 'test'): string =>
  writeSigningKeys(undefined, roles, kid);

/** Shared with child processes a test spawns (they inherit the environment), so both sides hold the same keys. */
export const TEST_KEYS_DIR = (process.env['VM_TEST_KEYS_DIR'] ??= writeKeysDir());

/** A sealer of `role` with the test keys (what that component would seal). */
export const testSealer = (role: Role, dir = TEST_KEYS_DIR): Sealer => sealerOf(keyringFor(role, readKeys(dir)))!;
