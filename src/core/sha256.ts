/**
 * SHA-256 fed in pieces (FIPS 180-4), synchronous and pure: model files hashed while they stream (WebCrypto's
 * `digest` takes the whole input at once, which for a multi-GB weights file means one buffer holding it all), and
 * tool-definition pins, which must hash the same in the page, the worker and Node (the core has no `crypto.subtle`
 * on every host). Checked against node:crypto in test/unit/sha256.test.ts.
 */

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
  0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
  0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
  0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const BLOCK_BYTES = 64;

/** An incremental SHA-256: `update` with each piece, then `hex()` once. */
export interface Sha256 {
  update(bytes: Uint8Array): void;
  /** The digest as lowercase hex; the hash takes no more input after it. */
  hex(): string;
  /** Bytes fed so far. */
  readonly length: number;
}

/** Starts a SHA-256 over bytes given in pieces of any sizes. */
export function createSha256(): Sha256 {
  const h = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Int32Array(64);
  const pending = new Uint8Array(BLOCK_BYTES);
  let pendingBytes = 0;
  let length = 0;
  let finished = false;

  const compress = (data: Uint8Array, offset: number): void => {
    // Int32 arithmetic throughout (| 0), so V8 never turns a sum past 2^31 into a double.
    for (let i = 0, j = offset; i < 16; i++, j += 4) w[i] = (data[j]! << 24) | (data[j + 1]! << 16) | (data[j + 2]! << 8) | data[j + 3]!;
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15]!;
      const y = w[i - 2]!;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) | 0;
    }
    let a = h[0]! | 0, b = h[1]! | 0, c = h[2]! | 0, d = h[3]! | 0, e = h[4]! | 0, f = h[5]! | 0, g = h[6]! | 0, k = h[7]! | 0;
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (k + s1 + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0]! + a) | 0; h[1] = (h[1]! + b) | 0; h[2] = (h[2]! + c) | 0; h[3] = (h[3]! + d) | 0;
    h[4] = (h[4]! + e) | 0; h[5] = (h[5]! + f) | 0; h[6] = (h[6]! + g) | 0; h[7] = (h[7]! + k) | 0;
  };

  const update = (bytes: Uint8Array): void => {
    if (finished) throw new Error('sha256: update() after hex()');
    length += bytes.byteLength;
    let at = 0;
    if (pendingBytes > 0) {
      const take = Math.min(BLOCK_BYTES - pendingBytes, bytes.byteLength);
      pending.set(bytes.subarray(0, take), pendingBytes);
      pendingBytes += take;
      at = take;
      if (pendingBytes < BLOCK_BYTES) return;
      compress(pending, 0);
      pendingBytes = 0;
    }
    // Whole blocks straight from the input: no copy of the bulk of a large file.
    for (; at + BLOCK_BYTES <= bytes.byteLength; at += BLOCK_BYTES) compress(bytes, at);
    pending.set(bytes.subarray(at), 0);
    pendingBytes = bytes.byteLength - at;
  };

  const hex = (): string => {
    if (finished) throw new Error('sha256: hex() called twice');
    const bits = length * 8;
    const tail = new Uint8Array(((pendingBytes + 9 + BLOCK_BYTES - 1) >> 6) << 6);
    tail.set(pending.subarray(0, pendingBytes));
    tail[pendingBytes] = 0x80;
    // The length in bits as a 64-bit big-endian integer; files stay far below 2^53 bits.
    const view = new DataView(tail.buffer);
    view.setUint32(tail.byteLength - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(tail.byteLength - 4, bits >>> 0);
    for (let at = 0; at < tail.byteLength; at += BLOCK_BYTES) compress(tail, at);
    finished = true;
    return Array.from(h, (v) => (v >>> 0).toString(16).padStart(8, '0')).join('');
  };

  return {
    update,
    hex,
    get length() {
      return length;
    },
  };
}
