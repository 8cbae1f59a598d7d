// Cosign-format key pairs, offline: an ECDSA P-256 key, its private half as cosign writes it
// (`cosign generate-key-pair`): a PEM block "ENCRYPTED SIGSTORE PRIVATE KEY" whose body is
// go-securesystemslib's encrypted JSON ({kdf: scrypt N=32768 r=8 p=1 with a 32-byte salt,
// cipher: nacl/secretbox with a 24-byte nonce, ciphertext}) of the PKCS#8 DER; the public half a
// plain "PUBLIC KEY" PEM (SPKI). skopeo's --sign-by-sigstore-private-key and cosign read the
// private key; skopeo/podman policy.json (sigstoreSigned keyPath), cosign, Kyverno and the
// policy-controller read the public key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, scryptSync } from 'node:crypto';
import { z } from 'zod';
import { secretboxOpen, secretboxSeal } from './secretbox.ts';

export const PRIVATE_PEM_TYPE = 'ENCRYPTED SIGSTORE PRIVATE KEY';
/** What cosign before 2.0 wrote; still read. */
const LEGACY_PRIVATE_PEM_TYPE = 'ENCRYPTED COSIGN PRIVATE KEY';
/** go-securesystemslib's "legacy" scrypt parameters: the ones cosign has always written. */
const SCRYPT = { N: 32768, r: 8, p: 1 } as const;

const EncryptedKey = z.object({
  kdf: z.object({
    name: z.literal('scrypt'),
    params: z.object({ N: z.number().int().positive(), r: z.number().int().positive(), p: z.number().int().positive() }),
    salt: z.string(),
  }),
  cipher: z.object({ name: z.literal('nacl/secretbox'), nonce: z.string() }),
  ciphertext: z.string(),
});

const pem = (type: string, der: Uint8Array) =>
  `-----BEGIN ${type}-----\n${(
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n')}\n-----END ${type}-----\n`;

function scryptKey(passphrase: string, salt: Uint8Array, p: { N: number; r: number; p: number }): Buffer {
  return scryptSync(Buffer.from(passphrase, 'utf8'), salt, 32, { N: p.N, r: p.r, p: p.p, maxmem: 256 * p.N * p.r + (1 << 20) });
}

export interface CosignKeyPair {
  /** The encrypted private key PEM (cosign.key). */
  privatePem: string;
  /** The public key PEM (cosign.pub). */
  publicPem: string;
}

export function encryptPrivateKey(key: KeyObject, passphrase: string): string {
  const der = key.export({ format: 'der', type: 'pkcs8' });
  const salt = randomBytes(32);
  const nonce = randomBytes(24);
  const box = secretboxSeal(der, nonce, scryptKey(passphrase, salt, SCRYPT));
  const json = {
    kdf: { name: 'scrypt', params: SCRYPT, salt: salt.toString('base64') },
    cipher: { name: 'nacl/secretbox', nonce: nonce.toString('base64') },
    ciphertext: Buffer.from(box).toString('base64'),
  };
  return pem(PRIVATE_PEM_TYPE, Buffer.from(JSON.stringify(json)));
}

export function generateCosignKeyPair(passphrase: string): CosignKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privatePem: encryptPrivateKey(privateKey, passphrase),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}

/** Decrypts a cosign private key PEM; throws on a wrong passphrase or another format. */
export function loadCosignPrivateKey(text: string, passphrase: string): KeyObject {
  const m = /-----BEGIN ([A-Z ]+)-----\r?\n([\s\S]+?)-----END \1-----/.exec(text);
  if (!m || (m[1] !== PRIVATE_PEM_TYPE && m[1] !== LEGACY_PRIVATE_PEM_TYPE))
    throw new Error(`not a cosign private key (expected a PEM block "${PRIVATE_PEM_TYPE}")`);
  const enc = EncryptedKey.parse(JSON.parse(Buffer.from(m[2]!.replace(/\s+/g, ''), 'base64').toString('utf8')));
  const key = scryptKey(passphrase, Buffer.from(enc.kdf.salt, 'base64'), enc.kdf.params);
  const der = secretboxOpen(Buffer.from(enc.ciphertext, 'base64'), Buffer.from(enc.cipher.nonce, 'base64'), key);
  if (!der) throw new Error('cosign private key: the passphrase is wrong (or the key file is damaged)');
  return createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' });
}

export function loadPublicKey(pemText: string): KeyObject {
  const k = createPublicKey(pemText);
  if (k.asymmetricKeyType !== 'ec' || k.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('the public key is not ECDSA P-256');
  return k;
}
