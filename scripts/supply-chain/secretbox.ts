// NaCl secretbox (XSalsa20 stream + Poly1305 tag), the cipher of a cosign/sigstore encrypted
// private key (go-securesystemslib's encrypted package: scrypt, then "nacl/secretbox").
// node:crypto has scrypt but neither Salsa20 nor a bare Poly1305, and the keys are a few hundred
// bytes, so a plain implementation (BigInt Poly1305) is fast enough and avoids a dependency.
// Output layout as Go's secretbox.Seal and tweetnacl: 16-byte tag, then the ciphertext.

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] as const;

const rotl = (v: number, c: number) => ((v << c) | (v >>> (32 - c))) >>> 0;

function rounds(x: Uint32Array): void {
  const qr = (a: number, b: number, c: number, d: number) => {
    x[b] = (x[b]! ^ rotl((x[a]! + x[d]!) >>> 0, 7)) >>> 0;
    x[c] = (x[c]! ^ rotl((x[b]! + x[a]!) >>> 0, 9)) >>> 0;
    x[d] = (x[d]! ^ rotl((x[c]! + x[b]!) >>> 0, 13)) >>> 0;
    x[a] = (x[a]! ^ rotl((x[d]! + x[c]!) >>> 0, 18)) >>> 0;
  };
  for (let i = 0; i < 10; i++) {
    qr(0, 4, 8, 12);
    qr(5, 9, 13, 1);
    qr(10, 14, 2, 6);
    qr(15, 3, 7, 11);
    qr(0, 1, 2, 3);
    qr(5, 6, 7, 4);
    qr(10, 11, 8, 9);
    qr(15, 12, 13, 14);
  }
}

/** The Salsa20 input block: constants, a 32-byte key and 16 bytes of nonce/counter. */
function block(key: Uint8Array, sixteen: Uint8Array): Uint32Array {
  const k = new DataView(key.buffer, key.byteOffset, 32);
  const n = new DataView(sixteen.buffer, sixteen.byteOffset, 16);
  const s = new Uint32Array(16);
  [s[0], s[5], s[10], s[15]] = SIGMA;
  for (let i = 0; i < 4; i++) {
    s[1 + i] = k.getUint32(4 * i, true);
    s[11 + i] = k.getUint32(16 + 4 * i, true);
    s[6 + i] = n.getUint32(4 * i, true);
  }
  return s;
}

function hsalsa20(key: Uint8Array, nonce16: Uint8Array): Uint8Array {
  const x = block(key, nonce16);
  rounds(x);
  const out = new Uint8Array(32);
  const v = new DataView(out.buffer);
  for (const [i, w] of [0, 5, 10, 15, 6, 7, 8, 9].entries()) v.setUint32(4 * i, x[w]!, true);
  return out;
}

function xsalsa20Stream(key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array {
  const sub = hsalsa20(key, nonce.subarray(0, 16));
  const out = new Uint8Array(length);
  const inp = new Uint8Array(16);
  inp.set(nonce.subarray(16, 24), 0);
  for (let counter = 0, off = 0; off < length; counter++, off += 64) {
    new DataView(inp.buffer).setBigUint64(8, BigInt(counter), true);
    const s = block(sub, inp);
    const x = s.slice();
    rounds(x);
    const b = new Uint8Array(64);
    const v = new DataView(b.buffer);
    for (let i = 0; i < 16; i++) v.setUint32(4 * i, (x[i]! + s[i]!) >>> 0, true);
    out.set(b.subarray(0, Math.min(64, length - off)), off);
  }
  return out;
}

const le = (b: Uint8Array): bigint => {
  let n = 0n;
  for (let i = b.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(b[i]!);
  return n;
};

function poly1305(key: Uint8Array, msg: Uint8Array): Uint8Array {
  const p = (1n << 130n) - 5n;
  const r = le(key.subarray(0, 16)) & 0x0ffffffc0ffffffc0ffffffc0fffffffn;
  const s = le(key.subarray(16, 32));
  let acc = 0n;
  for (let i = 0; i < msg.length; i += 16) {
    const chunk = msg.subarray(i, Math.min(i + 16, msg.length));
    acc = ((acc + le(chunk) + (1n << BigInt(8 * chunk.length))) * r) % p;
  }
  let tag = (acc + s) & ((1n << 128n) - 1n);
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++, tag >>= 8n) out[i] = Number(tag & 0xffn);
  return out;
}

function check(key: Uint8Array, nonce: Uint8Array): void {
  if (key.length !== 32) throw new Error(`secretbox: the key must be 32 bytes, not ${key.length}`);
  if (nonce.length !== 24) throw new Error(`secretbox: the nonce must be 24 bytes, not ${nonce.length}`);
}

export function secretboxSeal(plaintext: Uint8Array, nonce: Uint8Array, key: Uint8Array): Uint8Array {
  check(key, nonce);
  const stream = xsalsa20Stream(key, nonce, 32 + plaintext.length);
  const c = new Uint8Array(plaintext.length);
  for (let i = 0; i < c.length; i++) c[i] = plaintext[i]! ^ stream[32 + i]!;
  const out = new Uint8Array(16 + c.length);
  out.set(poly1305(stream.subarray(0, 32), c), 0);
  out.set(c, 16);
  return out;
}

/** The plaintext, or undefined when the tag does not match (wrong key or altered box). */
export function secretboxOpen(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Uint8Array | undefined {
  check(key, nonce);
  if (box.length < 16) return undefined;
  const c = box.subarray(16);
  const stream = xsalsa20Stream(key, nonce, 32 + c.length);
  const tag = poly1305(stream.subarray(0, 32), c);
  let diff = 0;
  for (let i = 0; i < 16; i++) diff |= tag[i]! ^ box[i]!;
  if (diff !== 0) return undefined;
  const m = new Uint8Array(c.length);
  for (let i = 0; i < m.length; i++) m[i] = c[i]! ^ stream[32 + i]!;
  return m;
}
