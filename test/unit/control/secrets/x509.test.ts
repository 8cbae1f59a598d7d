import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { certificate, ecKey, serverCertificate } from '../../../../src/control/secrets/x509.ts';

// The certificates the chart's secrets hook makes without openssl: what Node's and OpenSSL's
// parsers read back from the DER it writes.

const tmp = mkdtempSync(join(tmpdir(), 'vm-x509-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const now = new Date('2026-12-05T00:00:00Z');

describe('serverCertificate', () => {
  const made = serverCertificate({
    caName: 'test-ca',
    commonName: 'volume-medic',
    dnsNames: ['volume-medic', 'volume-medic.ns.svc'],
    ipAddresses: ['127.0.0.1'],
    days: 3650,
    now,
  });
  const ca = new X509Certificate(made.caCrt);
  const leaf = new X509Certificate(made.crt);

  it('is a CA that signed a server certificate for exactly the names and the address given', () => {
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.subjectAltName).toBe('DNS:volume-medic, DNS:volume-medic.ns.svc, IP Address:127.0.0.1');
    expect(leaf.checkHost('volume-medic.ns.svc')).toBe('volume-medic.ns.svc');
    expect(leaf.checkHost('other.example')).toBeUndefined();
    expect(leaf.keyUsage ?? []).toContain('1.3.6.1.5.5.7.3.1'); // serverAuth (Node lists extended key usage here)
    expect(leaf.checkPrivateKey(createPrivateKey(made.key))).toBe(true);
  });

  it('is valid from an hour before now for the days asked', () => {
    expect(new Date(leaf.validFrom).toISOString()).toBe('2026-12-04T23:00:00.000Z');
    expect(new Date(leaf.validTo).toISOString()).toBe(new Date(now.getTime() + 3650 * 86_400_000).toISOString());
    expect(leaf.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/); // 16 bytes, positive
  });

  it('openssl verifies the chain and reads the extensions', () => {
    if (spawnSync('openssl', ['version']).error) return;
    writeFileSync(join(tmp, 'ca.pem'), made.caCrt);
    writeFileSync(join(tmp, 'crt.pem'), made.crt);
    writeFileSync(join(tmp, 'key.pem'), made.key);
    expect(
      execFileSync('openssl', ['verify', '-CAfile', join(tmp, 'ca.pem'), '-attime', String(now.getTime() / 1000 + 60), join(tmp, 'crt.pem')], {
        encoding: 'utf8',
      }),
    ).toContain(': OK');
    const text = execFileSync('openssl', ['x509', '-in', join(tmp, 'crt.pem'), '-noout', '-text'], { encoding: 'utf8' });
    expect(text).toMatch(/Signature Algorithm: ecdsa-with-SHA256/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
    // The key is the certificate's (PKCS #8 PEM, as Redis and Node load it).
    const pub = (f: string, args: string[]) => execFileSync('openssl', [...args, '-in', join(tmp, f), '-pubout'], { encoding: 'utf8' });
    expect(pub('key.pem', ['pkey'])).toBe(execFileSync('openssl', ['x509', '-in', join(tmp, 'crt.pem'), '-noout', '-pubkey'], { encoding: 'utf8' }));
  });
});

describe('certificate', () => {
  it('a self-signed certificate valid past 2049 uses GeneralizedTime and still parses (the control certificate: 100 years)', () => {
    const k = ecKey();
    const c = new X509Certificate(
      certificate({ commonName: 'volume-medic-controls', publicKey: k.publicKey, selfKey: k.privateKey, isCA: false, days: 36500, now }),
    );
    expect(new Date(c.validTo).getUTCFullYear()).toBe(2126);
    expect(c.subject).toBe('CN=volume-medic-controls');
    expect(c.checkPrivateKey(k.privateKey)).toBe(true);
    expect(c.verify(k.publicKey)).toBe(true);
  });

  it('refuses an address that is not IPv4, and a certificate without a key to sign it', () => {
    const k = ecKey();
    expect(() => certificate({ commonName: 'x', publicKey: k.publicKey, selfKey: k.privateKey, isCA: false, days: 1, ipAddresses: ['::1'] })).toThrow(/IPv4/);
    expect(() => certificate({ commonName: 'x', publicKey: k.publicKey, isCA: false, days: 1 })).toThrow(/issuer/);
  });
});
