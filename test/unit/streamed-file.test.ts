/**
 * The browser reader's streamed external data, in Node with a stand-in fetch: the bytes come back as a
 * Blob only once size and SHA-256 match the manifest; a server sending more than the file is stopped as
 * soon as it does; a changed byte is refused naming the file and both hashes; progress is per MiB.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IntegrityError } from '../../src/core/errors.js';
import { createBrowserReader, type FileProgressEvent } from '../../src/engine/files-browser.js';
import { loadModelFiles, streamCheck } from '../../src/engine/model-files.js';

const FILE = 'onnx/model.onnx_data';
const CHUNK_BYTES = 256 * 1024;
/** Ten chunks: 2.5 MiB, so progress comes more than once. */
const bytes = new Uint8Array(10 * CHUNK_BYTES).map((_, i) => (i * 31 + 7) & 0xff);
const entry = { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.byteLength };

/** A fetch that answers with `body` in CHUNK_BYTES pieces and counts how many the reader pulled. */
function servedAs(body: Uint8Array): { fetch: typeof fetch; pulled: () => number } {
  let pulled = 0;
  const fetchStub = async () => {
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= body.byteLength) return controller.close();
        pulled += 1;
        controller.enqueue(body.slice(at, at + CHUNK_BYTES));
        at += CHUNK_BYTES;
      },
    });
    return new Response(stream, { headers: { 'content-length': String(body.byteLength) } });
  };
  return { fetch: fetchStub as unknown as typeof fetch, pulled: () => pulled };
}

const reader = (f: typeof fetch, onProgress?: (e: FileProgressEvent) => void) =>
  createBrowserReader({ baseUrl: 'http://127.0.0.1:9/model/', fetch: f, caches: null, ...(onProgress ? { onProgress } : {}) });

describe('streamed external data', () => {
  it('returns the bytes as a Blob once they match, with progress each MiB and at the end', async () => {
    const events: FileProgressEvent[] = [];
    const blob = await reader(servedAs(bytes).fetch, (e) => events.push(e)).streamed(FILE, streamCheck(FILE, entry));
    // Compared as one Buffer: a deep equality over 2.5 million elements takes a minute.
    expect(Buffer.from(await blob.arrayBuffer()).equals(bytes)).toBe(true);
    // 256 KiB chunks: one event on reaching each MiB, and one at the end.
    expect(events.map((e) => e.loadedBytes)).toEqual([1 << 20, 2 << 20, bytes.byteLength]);
    expect(events.at(-1)).toEqual({ type: 'file', file: FILE, loadedBytes: bytes.byteLength, totalBytes: bytes.byteLength, fromCache: false });
  });

  it('stops a server that sends more than the file as soon as it does', async () => {
    const longer = new Uint8Array(bytes.byteLength * 4);
    longer.set(bytes);
    const served = servedAs(longer);
    const refused = reader(served.fetch).streamed(FILE, streamCheck(FILE, entry));
    await expect(refused).rejects.toThrow(IntegrityError);
    await expect(refused).rejects.toThrow(`model file "${FILE}" has ${bytes.byteLength + CHUNK_BYTES} bytes, the manifest says ${bytes.byteLength}`);
    // One chunk past the file, not the forty the server would send.
    expect(served.pulled()).toBeLessThanOrEqual(12);
  });

  it('refuses a changed byte, naming the file, the expected and the received hash', async () => {
    const changed = bytes.slice();
    changed[changed.length >> 1] = changed[changed.length >> 1]! ^ 1;
    const actual = createHash('sha256').update(changed).digest('hex');
    await expect(reader(servedAs(changed).fetch).streamed(FILE, streamCheck(FILE, entry))).rejects.toThrow(
      `model file hash mismatch for "${FILE}": expected sha256 ${entry.sha256}, got ${actual}; this may indicate tampering`,
    );
  });

  it('refuses a file cut short', async () => {
    await expect(reader(servedAs(bytes.subarray(0, CHUNK_BYTES * 3)).fetch).streamed(FILE, streamCheck(FILE, entry))).rejects.toThrow(`has ${CHUNK_BYTES * 3} bytes, the manifest says ${bytes.byteLength}`);
  });
});

describe('the loader around a streamed reader', () => {
  const manifest = { files: { 'config.json': { sha256: '0'.repeat(64), size: 2 }, 'onnx/model.onnx': { sha256: '0'.repeat(64), size: 1 }, [FILE]: entry } };

  it('refuses bytes a reader returns without passing them through the check', async () => {
    // Every other file stays pending, so the outcome is the streamed file's alone.
    const read = Object.assign((path: string): Promise<Uint8Array> => (path === 'manifest.json' ? Promise.resolve(new TextEncoder().encode(JSON.stringify(manifest))) : new Promise<Uint8Array>(() => undefined)), {
      streamed: async () => new Blob([bytes]),
    });
    await expect(loadModelFiles(read, 'fp32')).rejects.toThrow(`model file "${FILE}" came back from the reader without passing its check against manifest.json`);
  });
});
