/**
 * The scoring plan: which path a backend gets under 'auto' (the H100 measured one batch of every variant
 * 8x faster than the prefix path on WebGPU; a CPU wants the fewest tokens), and the naive path's batches
 * under a byte budget, on the committed tiny-proxy fixture: the same log-probs however the variants are
 * grouped, every pass within the budget, and no KV outputs fetched that nobody reads.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Tensor } from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors';
import { scoringPlan, WEBGPU_MAX_BATCH_BYTES } from '../../src/engine/engine';
import { dimsFromConfig } from '../../src/engine/model-config';
import { createOrtSession, type OrtSession } from '../../src/engine/ort-session';
import { DEFAULT_MAX_BATCH_TOKENS, estimateForwardBytes, planBatches, scoreSequences, type ModelDims, type ScoreSequence } from '../../src/engine/scorer';

const FIXTURE = fileURLToPath(new URL('../fixtures/tiny-proxy/', import.meta.url));
const config = JSON.parse(readFileSync(`${FIXTURE}config.json`, 'utf8')) as Record<string, number>;
const dims: ModelDims = dimsFromConfig(config, config['pad_token_id']!);

describe('scoringPlan', () => {
  it("gives WebGPU every variant batched under a byte budget, and CPUs the prefix path, under 'auto' (the default)", () => {
    expect(scoringPlan('webgpu', {})).toEqual({ scoring: 'naive', maxBatchTokens: undefined, maxBatchBytes: WEBGPU_MAX_BATCH_BYTES });
    expect(scoringPlan('webgpu', { scoring: 'auto', maxBatchBytes: 1 << 20, maxBatchTokens: 512 })).toEqual({ scoring: 'naive', maxBatchTokens: 512, maxBatchBytes: 1 << 20 });
    for (const backend of ['node', 'wasm'] as const) {
      // No budget given: the prefix scorer sizes its default to the check (defaultBatchBytes).
      expect(scoringPlan(backend, {})).toEqual({ scoring: 'prefix', maxBatchBytes: undefined });
      expect(scoringPlan(backend, { scoring: 'auto', maxBatchBytes: 1 << 20 })).toEqual({ scoring: 'prefix', maxBatchBytes: 1 << 20 });
    }
  });

  it('keeps an explicit plan on every backend', () => {
    expect(scoringPlan('webgpu', { scoring: 'prefix' })).toEqual({ scoring: 'prefix', maxBatchBytes: undefined });
    expect(scoringPlan('node', { scoring: 'naive' })).toEqual({ scoring: 'naive', maxBatchTokens: DEFAULT_MAX_BATCH_TOKENS, maxBatchBytes: undefined });
    expect(scoringPlan('wasm', { scoring: 'naive', maxBatchTokens: 100, maxBatchBytes: 1000 })).toEqual({ scoring: 'naive', maxBatchTokens: 100, maxBatchBytes: 1000 });
  });

  it('refuses a plan or budget it cannot run, naming what is allowed', () => {
    const cases: Array<[object, RegExp]> = [
      [{ scoring: 'fast' }, /Invalid option scoring: received "fast"; allowed: "auto" \| "prefix" \| "naive"/],
      [{ maxBatchTokens: 0 }, /Invalid option maxBatchTokens: received 0; allowed: an integer >= 1/],
      [{ maxBatchBytes: 1.5 }, /Invalid option maxBatchBytes: received 1.5; allowed: an integer >= 1/],
      [{ maxBatchBytes: '1GB' }, /Invalid option maxBatchBytes: received "1GB"/],
    ];
    for (const [options, message] of cases) {
      expect(() => scoringPlan('webgpu', options)).toThrow(InvalidOptionsError);
      expect(() => scoringPlan('webgpu', options)).toThrow(message);
    }
  });
});

describe('planBatches', () => {
  it('groups sequences shortest first while the predicate holds, and runs one that fits nowhere alone', () => {
    const lengths = [30, 10, 20, 100];
    expect(planBatches(lengths, (rows, longest) => rows * longest <= 60)).toEqual([[1, 2], [0], [3]]);
    expect(planBatches(lengths, () => true)).toEqual([[1, 2, 0, 3]]);
    expect(planBatches(lengths, () => false)).toEqual([[1], [2], [0], [3]]);
    expect(planBatches([], () => true)).toEqual([]);
  });
});

/** Deterministic ids in [16, vocab): leave-one-out-shaped sequences (a shared head, one part removed each). */
function variants(count: number): ScoreSequence[] {
  let s = 7;
  const next = () => 16 + ((s = (s * 1664525 + 1013904223) >>> 0) % (dims.vocabSize - 16));
  const parts = Array.from({ length: count }, () => Array.from({ length: 30 }, next));
  const action = Array.from({ length: 5 }, next);
  return parts.map((_, drop) => ({ context: [0, ...parts.filter((_, i) => i !== drop).flat()], action }));
}

describe('the naive path under a byte budget (onnxruntime-node)', () => {
  let session: OrtSession;
  const passes: Array<{ rows: number; length: number; fetches: readonly string[] | undefined }> = [];
  let counting: OrtSession;

  beforeAll(async () => {
    session = await createOrtSession(readFileSync(`${FIXTURE}onnx/model.onnx`), { backend: 'node' });
    counting = {
      ...session,
      run: (feeds: Record<string, Tensor>, fetches?: readonly string[]) => {
        const [rows, length] = feeds['input_ids']!.dims as [number, number];
        passes.push({ rows, length, fetches });
        return session.run(feeds, fetches);
      },
    };
  });
  afterAll(async () => {
    await session.release();
  });

  it('runs every variant in one pass when they fit, one per pass when only one does, with the same log-probs', async () => {
    const sequences = variants(6);
    const length = sequences[0]!.context.length + sequences[0]!.action.length;
    const one = estimateForwardBytes(dims, 1, 0, length, 6);
    passes.length = 0;
    const together = await scoreSequences(counting, dims, sequences, { maxBatchBytes: estimateForwardBytes(dims, 6, 0, length, 6) });
    expect(passes.map((p) => p.rows)).toEqual([6]);
    passes.length = 0;
    const apart = await scoreSequences(counting, dims, sequences, { maxBatchBytes: one });
    expect(passes.map((p) => p.rows)).toEqual([1, 1, 1, 1, 1, 1]);
    passes.length = 0;
    const pairs = await scoreSequences(counting, dims, sequences, { maxBatchBytes: 2 * one + 1 });
    expect(passes.map((p) => p.rows)).toEqual([2, 2, 2]);
    for (const p of passes) expect(estimateForwardBytes(dims, p.rows, 0, p.length, 6)).toBeLessThanOrEqual(2 * one + 1);
    sequences.forEach((_, i) => {
      for (const other of [apart, pairs]) {
        together[i]!.tokenLogProbs.forEach((lp, j) => expect(Math.abs(lp - other[i]!.tokenLogProbs[j]!)).toBeLessThan(1e-4));
      }
    });
  });

  it('fetches only the logits (and attention rows when asked), never the KV outputs a GPU would keep', async () => {
    passes.length = 0;
    await scoreSequences(counting, dims, variants(3));
    expect(passes.length).toBeGreaterThan(0);
    for (const p of passes) expect(p.fetches).toEqual(['logits']);
  });
});
