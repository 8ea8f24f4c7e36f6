/**
 * Model files of any size in Node: hashing is a stream (the same digests as one-shot hashing), external
 * data is verified where it lies and handed to onnxruntime by path (never read into memory), scores equal
 * those of the same files loaded as bytes, and a file changed after it was verified, or a graph that names
 * a file the manifest does not pin, is refused.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { IntegrityError } from '../../src/core/errors.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { buildManifest, directoryReader, gitBlobSha1, hashFile, streamFile } from '../../src/engine/files-node.js';
import { loadModelFiles, type FileReader } from '../../src/engine/model-files.js';
import { externalDataLocations } from '../../src/engine/onnx-external-data.js';

// Every readFile the loader makes, to show that weights on disk are never read into memory.
const readPaths = vi.hoisted(() => [] as string[]);
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    readFile: (path: Parameters<typeof actual.readFile>[0], ...rest: unknown[]) => {
      readPaths.push(String(path));
      return (actual.readFile as (...a: unknown[]) => unknown)(path, ...rest);
    },
  };
});

const HUB = fileURLToPath(new URL('../fixtures/tiny-proxy-hub/', import.meta.url));
const MODEL_TIMEOUT_MS = 60_000;
// Several of the hash's 1 MiB reads and a ragged tail.
const HASHED_BYTES = 3 * (1 << 20) + 12_345;
const SEQUENCES = [
  { context: [0, 21, 34, 55, 89, 144], action: [233, 377, 61] },
  { context: [0, 5, 8, 13], action: [17, 19] },
];

/** A copy of the hub fixture that a test may change. */
function hubCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-by-path-'));
  cpSync(HUB, dir, { recursive: true });
  return dir;
}

describe('streaming hashes', () => {
  it('gives the one-shot SHA-256 and git blob SHA-1 of a file larger than one read, and reads from an offset', async () => {
    const bytes = new Uint8Array(HASHED_BYTES).map((_, i) => (i * 2654435761) >>> 24);
    const file = join(mkdtempSync(join(tmpdir(), 'edgearmor-hash-')), 'weights.bin');
    writeFileSync(file, bytes);
    const digest = await hashFile(file, { gitBlob: true });
    expect(digest).toEqual({ sha256: createHash('sha256').update(bytes).digest('hex'), size: HASHED_BYTES, gitSha1: gitBlobSha1(bytes) });
    const tail = createHash('sha256');
    expect(await streamFile(file, (chunk) => tail.update(chunk), 1_000_000)).toBe(HASHED_BYTES - 1_000_000);
    expect(tail.digest('hex')).toBe(createHash('sha256').update(bytes.subarray(1_000_000)).digest('hex'));
  });

  it('finds the external data file the fp32 graph names', () => {
    expect([...externalDataLocations(new Uint8Array(readFileSync(join(HUB, 'onnx/model.onnx'))))]).toEqual(['model.onnx_data']);
    expect(externalDataLocations(new Uint8Array(readFileSync(join(HUB, 'onnx/model_q4.onnx')))).size).toBe(0);
  });
});

describe('external data by path (Node)', () => {
  const engines: ProxyEngine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
  });

  for (const backend of ['node', 'wasm'] as const) {
    it(
      `${backend}: fp32's model.onnx_data is verified where it lies, never read whole by the loader, and scores as when loaded as bytes`,
      async () => {
        readPaths.length = 0;
        const reader = directoryReader(HUB);
        const byPath = await loadModelFiles(reader, 'fp32');
        expect(byPath.externalData).toEqual([{ path: 'model.onnx_data', local: expect.objectContaining({ file: join(HUB, 'onnx/model.onnx_data'), size: 1344768 }) }]);
        const engine = await createEngine(byPath, { backend, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) });
        engines.push(engine);
        expect(readPaths).toContain(join(HUB, 'onnx/model.onnx'));
        expect(readPaths.filter((p) => p.endsWith('onnx_data'))).toEqual([]);
        // The attention adapter still rewrites the graph, which holds no weights here.
        expect(engine.info.attention).toBe(true);

        const bytesOnly: FileReader = (path) => reader(path);
        const inMemory = await loadModelFiles(bytesOnly, 'fp32');
        expect('data' in inMemory.externalData[0]!).toBe(true);
        const reference = await createEngine(inMemory, { backend, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) });
        engines.push(reference);
        const [a, b] = await Promise.all([engine.scoreTokens(SEQUENCES), reference.scoreTokens(SEQUENCES)]);
        expect(a.map((r) => Array.from(r.tokenLogProbs))).toEqual(b.map((r) => Array.from(r.tokenLogProbs)));
      },
      MODEL_TIMEOUT_MS,
    );
  }

  it('refuses external data that differs from the manifest, or that changes after it was verified', async () => {
    const dir = hubCopy();
    const data = join(dir, 'onnx/model.onnx_data');
    const original = readFileSync(data);
    const flipped = Buffer.from(original);
    flipped[1000] = flipped[1000]! ^ 1;
    writeFileSync(data, flipped);
    await expect(loadModelFiles(directoryReader(dir), 'fp32')).rejects.toThrow(/model file hash mismatch for "onnx\/model.onnx_data".*may indicate tampering/);
    writeFileSync(data, original);
    const files = await loadModelFiles(directoryReader(dir), 'fp32');
    // Rewritten between the hash and the session: the same bytes, but no longer the file that was verified.
    writeFileSync(data, original);
    await expect(createEngine(files, { backend: 'node' })).rejects.toThrow(IntegrityError);
    await expect(createEngine(files, { backend: 'node' })).rejects.toThrow(/changed after it was verified/);
  });

  it('refuses a verified graph that names an external data file the manifest does not pin', async () => {
    const dir = hubCopy();
    const graph = readFileSync(join(dir, 'onnx/model.onnx'));
    // Same length, so the protobuf stays valid: the graph now reads onnx/model.onnx_evil.
    writeFileSync(join(dir, 'onnx/model.onnx'), Buffer.from(graph.toString('latin1').replaceAll('model.onnx_data', 'model.onnx_evil'), 'latin1'));
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(await buildManifest(dir)));
    cpSync(join(dir, 'onnx/model.onnx_data'), join(dir, 'onnx/model.onnx_evil'));
    const files = await loadModelFiles(directoryReader(dir), 'fp32');
    await expect(createEngine(files, { backend: 'node', exposeAttention: false })).rejects.toThrow(
      /the model's graph reads external data from "model.onnx_evil", which is not one of its verified files \(model.onnx_data\)/,
    );
  });
});
