/**
 * The streaming SHA-256 the browser uses to check weights while they download: equal to node:crypto's
 * on random inputs of many lengths (around the 64-byte block and the 55/56-byte padding edges), fed in
 * pieces that split blocks anywhere.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSha256 } from '../../src/core/sha256.js';

const nodeSha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Lengths around every edge of the padding: empty, one block less or more a byte, the 55/56 split, several blocks. */
const LENGTHS = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 191, 192, 1000, 4095, 4096, 4097, 65_537, 1_000_003];

/** Splits bytes into pieces of seeded random sizes (0 to 200 bytes, some empty). */
function pieces(bytes: Uint8Array, seed: number): Uint8Array[] {
  let s = seed;
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; ) {
    s = (s * 1664525 + 1013904223) >>> 0;
    const n = s % 201;
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  return out;
}

describe('createSha256', () => {
  it('equals node:crypto on known vectors', () => {
    const hash = (text: string) => {
      const h = createSha256();
      h.update(new TextEncoder().encode(text));
      return h.hex();
    };
    expect(hash('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hash('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
  });

  it.each(LENGTHS)('equals node:crypto on %i random bytes, whole and in random pieces', (n) => {
    const bytes = new Uint8Array(randomBytes(n));
    const whole = createSha256();
    whole.update(bytes);
    const split = createSha256();
    for (const piece of pieces(bytes, n + 1)) split.update(piece);
    expect(split.length).toBe(n);
    const expected = nodeSha256(bytes);
    expect(whole.hex()).toBe(expected);
    expect(split.hex()).toBe(expected);
  });

  it('equals node:crypto when every piece ends exactly on a block boundary or one byte past it', () => {
    const bytes = new Uint8Array(randomBytes(64 * 40 + 1));
    for (const step of [64, 65, 128, 63]) {
      const h = createSha256();
      for (let at = 0; at < bytes.byteLength; at += step) h.update(bytes.subarray(at, at + step));
      expect(h.hex()).toBe(nodeSha256(bytes));
    }
  });

  it('refuses input after the digest', () => {
    const h = createSha256();
    h.hex();
    expect(() => h.update(new Uint8Array(1))).toThrow(/after hex/);
  });
});
