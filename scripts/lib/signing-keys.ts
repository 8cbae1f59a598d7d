import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROLES, type Role } from '../../src/core/trust/roles.ts';

// Writes signing keys the way a deployment mounts them (src/core/trust/keyring.ts): one file per key,
// `<role>.<key id>`, 32 random bytes in base64, readable by the owner only.

export function writeSigningKeys(dir: string | undefined, roles: readonly Role[] = ROLES, kid = new Date().toISOString().slice(0, 10)): string {
  const out = dir ?? mkdtempSync(join(tmpdir(), 'vm-keys-'));
  mkdirSync(out, { recursive: true, mode: 0o700 });
  for (const r of roles) writeFileSync(join(out, `${r}.${kid}`), `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return out;
}
