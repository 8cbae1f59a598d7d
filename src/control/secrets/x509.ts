import { createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIPv4 } from 'node:net';

// X.509 certificates without openssl or a library: the image has neither, and the chart's hook
// Job (src/control/secrets/main.ts) makes the receiver's and the bundled Redis's certificates and the
// control signing certificate. ECDSA P-256 keys, signed with SHA-256 (RFC 5280, RFC 5758): a CA
// and a server certificate it signs, or a self-signed one. Only what the consumers check is
// written: basic constraints, key usage, server auth, subject alternative names.

// --- DER ---------------------------------------------------------------------------------------
const len = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);
const explicit = (n: number, ...c: Buffer[]) => tlv(0xa0 + n, ...c);
const bool = (b: boolean) => tlv(0x01, Buffer.from([b ? 0xff : 0]));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer) => tlv(0x03, Buffer.from([0]), b);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
/** A positive INTEGER from big-endian bytes. */
const uint = (b: Buffer): Buffer => {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return tlv(0x02, (v[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), v]) : v);
};
const oid = (dotted: string): Buffer => {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const groups: number[] = [];
    for (let v = n; ; v = Math.floor(v / 128)) {
      groups.unshift(v % 128);
      if (v < 128) break;
    }
    out.push(...groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g)));
  }
  return tlv(0x06, Buffer.from(out));
};
/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280, 4.1.2.5). */
const time = (d: Date): Buffer => {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
};

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const extension = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

// --- certificates ------------------------------------------------------------------------------
export interface CertificateRequest {
  /** The subject's common name. */
  commonName: string;
  /** The subject's public key. */
  publicKey: KeyObject;
  /** The issuer: itself (self-signed) when absent. */
  issuer?: { commonName: string; privateKey: KeyObject };
  /** The private key of a self-signed certificate (with no issuer). */
  selfKey?: KeyObject;
  /** A CA may sign certificates; a server certificate may not. */
  isCA: boolean;
  dnsNames?: readonly string[];
  /** IPv4 addresses. */
  ipAddresses?: readonly string[];
  /** Valid from now minus an hour (clocks differ) for this many days. */
  days: number;
  now?: Date;
}

/** A certificate in PEM. */
export function certificate(r: CertificateRequest): string {
  const signer = r.issuer?.privateKey ?? r.selfKey;
  if (!signer) throw new Error('certificate: an issuer or, self-signed, its own private key');
  const now = r.now ?? new Date();
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40; // positive, 16 bytes
  const sans: Buffer[] = [
    ...(r.dnsNames ?? []).map((n) => tlv(0x82, Buffer.from(n, 'ascii'))),
    ...(r.ipAddresses ?? []).map((ip) => {
      if (!isIPv4(ip)) throw new Error(`certificate: ${ip} is not an IPv4 address`);
      return tlv(0x87, Buffer.from(ip.split('.').map(Number)));
    }),
  ];
  const extensions = [
    extension('2.5.29.19', true, seq(...(r.isCA ? [bool(true)] : []))),
    // keyCertSign + cRLSign for a CA (bits 5, 6), digitalSignature (bit 0) for an ECDSA server key.
    extension('2.5.29.15', true, r.isCA ? tlv(0x03, Buffer.from([1, 0x06])) : tlv(0x03, Buffer.from([7, 0x80]))),
    ...(r.isCA ? [] : [extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1')))]),
    ...(sans.length > 0 ? [extension('2.5.29.17', false, seq(...sans))] : []),
  ];
  const tbs = seq(
    explicit(0, uint(Buffer.from([2]))), // v3
    uint(serial),
    ECDSA_SHA256,
    name(r.issuer?.commonName ?? r.commonName),
    seq(time(new Date(now.getTime() - 3_600_000)), time(new Date(now.getTime() + r.days * 86_400_000))),
    name(r.commonName),
    r.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: signer, dsaEncoding: 'der' });
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  return `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

/** A new ECDSA P-256 key pair; the private key as PKCS #8 PEM. */
export function ecKey(): { privateKey: KeyObject; publicKey: KeyObject; pem: string } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, publicKey: createPublicKey(privateKey), pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/** A CA (its key is not kept) and a server certificate for these names, signed by it. */
export function serverCertificate(o: {
  caName: string;
  commonName: string;
  dnsNames: readonly string[];
  ipAddresses?: readonly string[];
  days: number;
  now?: Date;
}): { caCrt: string; crt: string; key: string } {
  const ca = ecKey();
  const caCrt = certificate({
    commonName: o.caName,
    publicKey: ca.publicKey,
    selfKey: ca.privateKey,
    isCA: true,
    days: o.days,
    ...(o.now ? { now: o.now } : {}),
  });
  const leaf = ecKey();
  const crt = certificate({
    commonName: o.commonName,
    publicKey: leaf.publicKey,
    issuer: { commonName: o.caName, privateKey: ca.privateKey },
    isCA: false,
    dnsNames: o.dnsNames,
    ipAddresses: o.ipAddresses ?? [],
    days: o.days,
    ...(o.now ? { now: o.now } : {}),
  });
  return { caCrt, crt, key: leaf.pem };
}
