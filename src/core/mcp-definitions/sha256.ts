/**
 * SHA-256 of a string's UTF-8 bytes for tool-definition pins: the core's SHA-256 (core/sha256.ts) over the text's
 * UTF-8, encoded here since the core has no TextEncoder on every host. Checked against node:crypto in
 * test/unit/mcp-definitions.test.ts.
 */
import { createSha256 } from '../sha256.js';

/** The UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, as TextEncoder writes it). */
function utf8(text: string): number[] {
  const out: number[] = [];
  for (const ch of text) {
    let c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return out;
}

/** The SHA-256 of `text`'s UTF-8 bytes as 64 lower-case hex digits. */
export function sha256Hex(text: string): string {
  const hash = createSha256();
  hash.update(Uint8Array.from(utf8(text)));
  return hash.hex();
}
