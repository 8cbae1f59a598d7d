import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  encryptPrivateKey,
  generateCosignKeyPair,
  loadCosignPrivateKey,
  loadPublicKey,
  PRIVATE_PEM_TYPE,
} from '../../../../scripts/supply-chain/cosign-key.ts';
import { secretboxOpen, secretboxSeal } from '../../../../scripts/supply-chain/secretbox.ts';

// The release key pair in cosign's format: NaCl secretbox (XSalsa20-Poly1305) against a vector
// from tweetnacl 1.0.3 (an independent implementation: nacl.secretbox(message, nonce, key)), and
// the encrypted PEM as go-securesystemslib lays it out, round-tripped and refused when wrong.

const VECTOR = {
  key: '07'.repeat(32),
  nonce: '09'.repeat(24),
  message: 'volume-medic secretbox vector: a message longer than one 64-byte Salsa20 block, to cross a block boundary.',
  box: '48bd965d31ec1e0ec0078297a69f0a43fa257f8352341f8161107b8b8a47d03112f8fa503b37eeabed45986195fe70096cb8c8fca4f21941228775363be8ee5a4f0bedcbb4452c364ba275dccc8d29c24a6e51f683e5f4499fb0e91acf2cb62363ca847b6ba72cab6647174c06754be5956b94422a26e1d03a08',
};
const hex = (h: string) => Buffer.from(h, 'hex');

describe('secretbox', () => {
  it("seals to tweetnacl's bytes and opens them back", () => {
    const box = secretboxSeal(Buffer.from(VECTOR.message), hex(VECTOR.nonce), hex(VECTOR.key));
    expect(Buffer.from(box).toString('hex')).toBe(VECTOR.box);
    expect(Buffer.from(secretboxOpen(hex(VECTOR.box), hex(VECTOR.nonce), hex(VECTOR.key))!).toString()).toBe(VECTOR.message);
  });

  it('refuses a box with one bit changed, a wrong key and a wrong nonce', () => {
    const box = hex(VECTOR.box);
    for (const i of [0, 15, 16, box.length - 1]) {
      const bad = Buffer.from(box);
      bad[i]! ^= 1;
      expect(secretboxOpen(bad, hex(VECTOR.nonce), hex(VECTOR.key)), `byte ${i}`).toBeUndefined();
    }
    expect(secretboxOpen(box, hex(VECTOR.nonce), hex('08'.repeat(32)))).toBeUndefined();
    expect(secretboxOpen(box, hex('0a'.repeat(24)), hex(VECTOR.key))).toBeUndefined();
  });

  it('round-trips every length around the 64-byte block and the 16-byte Poly1305 chunk', () => {
    for (const n of [0, 1, 15, 16, 17, 63, 64, 65, 128, 200]) {
      const m = Buffer.alloc(n, n);
      expect(Buffer.from(secretboxOpen(secretboxSeal(m, hex(VECTOR.nonce), hex(VECTOR.key)), hex(VECTOR.nonce), hex(VECTOR.key))!)).toEqual(m);
    }
  });
});

describe('cosign key pair', () => {
  it("writes cosign's PEM types and JSON fields, and the private key signs what the public key verifies", () => {
    const pair = generateCosignKeyPair('correct horse');
    expect(pair.privatePem).toMatch(new RegExp(`^-----BEGIN ${PRIVATE_PEM_TYPE}-----\\n`));
    expect(pair.publicPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    const body = JSON.parse(Buffer.from(pair.privatePem.split('\n').slice(1, -2).join(''), 'base64').toString());
    expect(body).toMatchObject({ kdf: { name: 'scrypt', params: { N: 32768, r: 8, p: 1 } }, cipher: { name: 'nacl/secretbox' } });
    expect(Buffer.from(body.kdf.salt, 'base64')).toHaveLength(32);
    expect(Buffer.from(body.cipher.nonce, 'base64')).toHaveLength(24);
    const key = loadCosignPrivateKey(pair.privatePem, 'correct horse');
    const sig = sign('sha256', Buffer.from('payload'), key);
    expect(verify('sha256', Buffer.from('payload'), loadPublicKey(pair.publicPem), sig)).toBe(true);
  });

  it('refuses a wrong passphrase, another PEM type and a public key that is not P-256', () => {
    const pair = generateCosignKeyPair('a');
    expect(() => loadCosignPrivateKey(pair.privatePem, 'b')).toThrow(/passphrase is wrong/);
    expect(() => loadCosignPrivateKey(pair.privatePem.replaceAll('SIGSTORE', 'OTHER'), 'a')).toThrow(/not a cosign private key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
    expect(() => loadPublicKey(rsa)).toThrow(/P-256/);
  });

  it("reads cosign 1.x's ENCRYPTED COSIGN PRIVATE KEY too", () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const legacy = encryptPrivateKey(privateKey, 'x').replaceAll('SIGSTORE', 'COSIGN');
    const key = loadCosignPrivateKey(legacy, 'x');
    expect(createPublicKey(key).export({ format: 'pem', type: 'spki' })).toBe(publicKey.export({ format: 'pem', type: 'spki' }));
  });
});
