import type { KeyObject } from 'node:crypto';
import { createHash, createPrivateKey, createPublicKey, sign, X509Certificate } from '../node-crypto.ts';
import { readFileSync } from 'node:fs';
import { KeyringError, type Keyring } from './keyring.ts';
import { makeSealer, sealedInput, type Purpose, type SealHead, type Sealer } from './seal.ts';

// Operator controls (modes, pauses, approval decisions) signed with an ECDSA P-256 key only the
// receiver holds, and checked with its certificate, which every process may hold: root on a node
// (which can read everything its agent mounts) cannot approve a step or set enforce, for any
// node. Work stays on HMAC (src/core/trust/seal.ts): a signature per job would cost the receiver's
// hot path more than the 10% allowed (docs/decisions/0001-node-scoped-trust.md).
//
// CONTROL_SIGNING_KEY_FILE: the PEM private key (the receiver's Secret). CONTROL_VERIFY_CERT_FILE:
// one or more PEM certificates of control keys (a ConfigMap; several while a key is rotated).
// A key's id is derived from its public key, so a certificate names the key it checks.

/** The key id of a public key: the first 16 base64url characters of its SPKI's SHA-256. */
const kidOf = (pub: KeyObject): string =>
  createHash('sha256')
    .update(pub.export({ type: 'spki', format: 'der' }))
    .digest('base64url')
    .slice(0, 16);

const isP256 = (k: KeyObject): boolean => k.asymmetricKeyType === 'ec' && k.asymmetricKeyDetails?.namedCurve === 'prime256v1';

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new KeyringError(`${what}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** The receiver's public control keys, from every certificate in `certFile`; HMAC keys: none. */
export function controlKeyring(certFile: string): Keyring {
  const pems = read(certFile, 'CONTROL_VERIFY_CERT_FILE').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) throw new KeyringError(`CONTROL_VERIFY_CERT_FILE: ${certFile} holds no PEM certificate`);
  const publicKeys = new Map<string, KeyObject>();
  for (const pem of pems) {
    const pub = new X509Certificate(pem).publicKey;
    if (!isP256(pub)) throw new KeyringError('CONTROL_VERIFY_CERT_FILE: control keys are ECDSA P-256');
    publicKeys.set(`receiver.${kidOf(pub)}`, pub);
  }
  return { verify: new Map(), publicKeys };
}

/** Seals controls with the private key in `keyFile` (the receiver's), as `es256`. */
export function controlSealer(keyFile: string, now: () => number = Date.now): Sealer {
  let key: KeyObject;
  try {
    key = createPrivateKey(read(keyFile, 'CONTROL_SIGNING_KEY_FILE'));
  } catch (err) {
    if (err instanceof KeyringError) throw err;
    throw new KeyringError(`CONTROL_SIGNING_KEY_FILE: ${keyFile} is not a PEM private key`);
  }
  if (!isP256(key)) throw new KeyringError('CONTROL_SIGNING_KEY_FILE: the control key must be ECDSA P-256');
  const signOf = (purpose: Purpose, subject: string, encoded: string, head: SealHead): string =>
    sign('sha256', Buffer.from(sealedInput(purpose, subject, encoded, head), 'utf8'), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return makeSealer('receiver', kidOf(createPublicKey(key)), signOf, now, 'es256');
}
