import { createHash, createPrivateKey, createPublicKey, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sealedBytes } from './encoding.ts';
import { KeyringError, type Keyring } from './keyring.ts';
import { sealedInput, type Seal, type Sealer } from './seal.ts';

// Operator controls (modes, pauses, approval decisions) signed with an ECDSA P-256 key only the
// receiver holds, and checked with its certificate, which every process may hold: root on a node
// (which can read everything its agent mounts) cannot approve a step or set enforce, for any
// node. Work stays on HMAC (src/trust/seal.ts): a signature per job would cost the receiver's
// hot path more than the 10% allowed (docs/decisions/0001-node-scoped-trust.md).
//
// CONTROL_SIGNING_KEY_FILE: the PEM private key (the receiver's Secret). CONTROL_VERIFY_CERT_FILE:
// one or more PEM certificates of control keys (a ConfigMap; several while a key is rotated).
// A key's id is derived from its public key, so a certificate names the key it checks.

/** The key id of a public key: the first 16 base64url characters of its SPKI's SHA-256. */
const kidOf = (pub: KeyObject): string => createHash('sha256').update(pub.export({ type: 'spki', format: 'der' })).digest('base64url').slice(0, 16);

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
    if (pub.asymmetricKeyType !== 'ec' || pub.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new KeyringError('CONTROL_VERIFY_CERT_FILE: control keys are ECDSA P-256');
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
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new KeyringError('CONTROL_SIGNING_KEY_FILE: the control key must be ECDSA P-256');
  const kid = kidOf(createPublicKey(key));
  const sealEncoded = (purpose: Parameters<Sealer['sealEncoded']>[0], subject: string, encoded: string, ttlMs: number, notBefore = 0): Seal => {
    const iat = Math.max(now(), notBefore);
    const head = { v: 1 as const, iss: 'receiver' as const, kid, iat, exp: iat + ttlMs };
    const sig = sign('sha256', Buffer.from(sealedInput(purpose, subject, encoded, head), 'utf8'), { key, dsaEncoding: 'ieee-p1363' });
    return { ...head, alg: 'es256', mac: sig.toString('base64url') };
  };
  return {
    role: 'receiver',
    seal: (purpose, subject, value, ttlMs, notBefore) => sealEncoded(purpose, subject, sealedBytes(value), ttlMs, notBefore),
    sealEncoded,
  };
}
