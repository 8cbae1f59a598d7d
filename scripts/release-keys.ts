// `npm run release-keys -- <dir>`: a cosign-format key pair for signing releases, made offline
// (Debian's skopeo cannot make one, and cosign is not packaged): <dir>/cosign.key (ECDSA P-256,
// encrypted as cosign encrypts it, with the passphrase from RELEASE_KEY_PASSWORD) and
// <dir>/cosign.pub. The public key of the project's releases is deploy/keys/cosign.pub; its
// private half never enters the repository (docs/supply-chain.md: where it lives, rotation).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCosignKeyPair } from './supply-chain/cosign-key.ts';

const [dir] = process.argv.slice(2);
const passphrase = process.env['RELEASE_KEY_PASSWORD'];
if (!dir || process.argv.includes('--help') || passphrase === undefined) {
  process.stderr.write('usage: RELEASE_KEY_PASSWORD=... npm run release-keys -- <dir>   (writes <dir>/cosign.key and <dir>/cosign.pub)\n');
  process.exit(dir && passphrase !== undefined ? 0 : 2);
}
for (const f of ['cosign.key', 'cosign.pub']) {
  if (existsSync(join(dir, f))) {
    process.stderr.write(`release-keys: ${join(dir, f)} already exists; not overwriting it\n`);
    process.exit(1);
  }
}
const pair = generateCosignKeyPair(passphrase);
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'cosign.key'), pair.privatePem, { mode: 0o600, flag: 'wx' });
writeFileSync(join(dir, 'cosign.pub'), pair.publicPem, { flag: 'wx' });
process.stdout.write(`wrote ${join(dir, 'cosign.key')} (private, encrypted) and ${join(dir, 'cosign.pub')}\n`);
