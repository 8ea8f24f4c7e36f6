import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_MAX_POSITIONS, floatInitializers, SOURCE_MODEL_DIR, writeBenchModel } from '../../lab/bench/bench-model.js';

const LAYERS = 4;
const KV_HEADS = 2;
const HEAD_DIM = 128;
const VOCAB = 4096;

const int64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);

describe('the benchmark timing model written from TypeScript', () => {
  let dir: string;
  let config: Record<string, unknown>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'edgearmor-bench-model-'));
    config = writeBenchModel(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps the embedded model's shapes and widens the position window for the 4k cases", () => {
    const source = JSON.parse(readFileSync(join(SOURCE_MODEL_DIR, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toEqual({ ...source, max_position_embeddings: BENCH_MAX_POSITIONS });
    expect(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'))).toEqual(config);
  });

  it('replaces every weight (N(0, 0.02), norms 1) and keeps the graph bytes', () => {
    const source = new Uint8Array(readFileSync(join(SOURCE_MODEL_DIR, 'onnx', 'model.onnx')));
    const written = new Uint8Array(readFileSync(join(dir, 'onnx', 'model.onnx')));
    expect(written.byteLength).toBe(source.byteLength);
    const inits = floatInitializers(written);
    expect(inits.map((i) => i.name)).toEqual(floatInitializers(source).map((i) => i.name));
    expect(inits).toHaveLength(1 + LAYERS * 9 + 1);
    let outside = 0;
    for (const init of inits) {
      const values = new Float32Array(written.slice(init.offset, init.offset + init.byteLength).buffer);
      if (init.name.endsWith('norm.weight')) {
        expect(values.every((v) => v === 1), init.name).toBe(true);
        continue;
      }
      const mean = values.reduce((a, v) => a + v, 0) / values.length;
      const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
      expect(Math.abs(mean), init.name).toBeLessThan(0.002);
      expect(std, init.name).toBeCloseTo(0.02, 2);
      outside += Number(source.slice(init.offset, init.offset + init.byteLength).some((b, i) => b !== written[init.offset + i]));
    }
    expect(outside).toBe(inits.length - (2 * LAYERS + 1));
    // Outside the weights, every byte (graph, nodes, names, opsets) is the export's.
    const isWeight = new Uint8Array(source.byteLength);
    for (const init of inits) isWeight.fill(1, init.offset, init.offset + init.byteLength);
    expect(source.every((b, i) => isWeight[i] === 1 || b === written[i])).toBe(true);
  });

  it('loads in onnxruntime-node with the exported inputs and outputs, and gives their shapes', async () => {
    const session = await ort.InferenceSession.create(join(dir, 'onnx', 'model.onnx'), { executionProviders: ['cpu'] });
    try {
      const past = 3;
      const seq = 5;
      const pastNames = Array.from({ length: LAYERS }, (_, i) => [`past_key_values.${i}.key`, `past_key_values.${i}.value`]).flat();
      expect(session.inputNames).toEqual(['input_ids', 'attention_mask', 'position_ids', 'num_logits_to_keep', 'num_attention_rows', ...pastNames]);
      const feeds: Record<string, ort.Tensor> = {
        input_ids: int64([5, 17, 300, 4000, 9], [1, seq]),
        attention_mask: int64(Array(past + seq).fill(1), [1, past + seq]),
        position_ids: int64([3, 4, 5, 6, 7], [1, seq]),
        num_logits_to_keep: int64([2], []),
        num_attention_rows: int64([3], []),
      };
      for (const name of pastNames) feeds[name] = new ort.Tensor('float32', new Float32Array(KV_HEADS * past * HEAD_DIM), [1, KV_HEADS, past, HEAD_DIM]);
      const out = await session.run(feeds);
      expect(out['logits']!.dims).toEqual([1, 2, VOCAB]);
      expect((out['logits']!.data as Float32Array).every(Number.isFinite)).toBe(true);
      for (let i = 0; i < LAYERS; i++) {
        expect(out[`present.${i}.key`]!.dims).toEqual([1, KV_HEADS, past + seq, HEAD_DIM]);
        expect(out[`present.${i}.value`]!.dims).toEqual([1, KV_HEADS, past + seq, HEAD_DIM]);
        expect(out[`attentions.${i}`]!.dims).toEqual([1, 2, 3, past + seq]);
      }
    } finally {
      await session.release();
    }
  });

  it('writes a one-MatMul model that multiplies by its [256, 704] weight', async () => {
    const session = await ort.InferenceSession.create(join(dir, 'onnx', 'matmul.onnx'), { executionProviders: ['cpu'] });
    try {
      expect(session.inputNames).toEqual(['x']);
      expect(session.outputNames).toEqual(['y']);
      const x = new Float32Array(3 * 256);
      x[0] = 1; // row 0 = e_0: y[0] is the weight's first row
      x[256 + 1] = 2; // row 1 = 2 e_1
      const y = (await session.run({ x: new ort.Tensor('float32', x, [3, 256]) }))['y']!;
      expect(y.dims).toEqual([3, 704]);
      const data = y.data as Float32Array;
      expect(data.slice(2 * 704).every((v) => v === 0)).toBe(true);
      expect(data.slice(0, 704).some((v) => v !== 0)).toBe(true);
      expect(Math.abs(data[0]!)).toBeLessThan(0.2);
    } finally {
      await session.release();
    }
  });
});
