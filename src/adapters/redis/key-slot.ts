// The Redis Cluster slot of a key: CRC16 (XMODEM) of the key's hash tag (the text between its
// first '{' and the next '}', when not empty) or of the whole key, modulo 16384, as Redis computes
// it (cluster.c keyHashSlot; checked against CLUSTER KEYSLOT in test/int/one-slot-connection.int.test.ts).

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let b = 0; b < 8; b++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

const CLUSTER_SLOTS = 16384;

export function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(Buffer.from(hashed, 'utf8')) % CLUSTER_SLOTS;
}
