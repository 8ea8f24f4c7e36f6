/**
 * Decoders in the onnx-community layout (test/fixtures/tiny-proxy-hub: the tiny-proxy weights with
 * external data, q4, fp16 and q4f16, no num_logits_to_keep, no attention outputs) load and score like the
 * same weights in EdgeArmor's export, on onnxruntime-node and onnxruntime-web (wasm), and the
 * attention adapter gives MindGuard the attention rows EdgeArmor's export would.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidOptionsError, ModelLoadError } from '../../src/core/errors.js';
import { appendToGraph, exposeAttention } from '../../src/engine/attention-adapter.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { float16ToFloat32 } from '../../src/engine/float16.js';
import { loadModelFiles, type ModelVariant } from '../../src/engine/model-files.js';
import { createOrtSession, type Backend } from '../../src/engine/ort-session.js';
import { estimateForwardBytes } from '../../src/engine/scorer.js';
import { scoreSequences } from '../../src/engine/scorer.js';
import { createNodeGuard } from '../../src/node.js';
import { findCase } from '../../src/scenarios/index.js';
import { STRICT_TEMPLATE, TOOL_TURNS_TEMPLATE } from './chatml-fixture.js';
import { dims, HUB, maxDiff, NOPOS, sequences, TINY, travelInjectionRequest } from './hub-fixture.js';

const MODEL_TIMEOUT_MS = 120_000;
// Same weights and graph math: only float rounding differs between the two exports.
const SAME_WEIGHTS_TOL = 1e-4;
// fp16 weights and activations against the fp32 reference on this deliberately peaked random model.
const FP16_TOL = 0.05;
// fp16 rounding differs with batch shape (padding, chunking), so the two paths agree to fp16's precision.
const FP16_PATHS_TOL = 5e-3;

describe('hub-layout decoders (onnx-community names, external data, no extensions)', () => {
  const engines: ProxyEngine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
  });

  async function hubEngine(variant: ModelVariant, backend: Backend, scoring: 'naive' | 'prefix' = 'prefix'): Promise<ProxyEngine> {
    const files = await loadModelFiles(directoryReader(HUB), variant);
    const engine = await createEngine(files, { backend, scoring, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) });
    engines.push(engine);
    return engine;
  }

  async function reference(variant: 'fp32' | 'q4', backend: Backend): Promise<Float64Array[]> {
    const file = variant === 'fp32' ? 'model.onnx' : 'model_q4.onnx';
    const session = await createOrtSession(new Uint8Array(readFileSync(`${TINY}onnx/${file}`)), { backend, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) });
    try {
      return (await scoreSequences(session, dims, sequences())).map((r) => r.tokenLogProbs);
    } finally {
      await session.release();
    }
  }

  for (const backend of ['node', 'wasm'] as const) {
    it(
      `${backend}: fp32 with its weights in onnx/model.onnx_data and q4 score as the EdgeArmor export of the same weights`,
      async () => {
        for (const variant of ['fp32', 'q4'] as const) {
          const engine = await hubEngine(variant, backend);
          expect(engine.info).toMatchObject({ variant });
          const got = (await engine.scoreTokens(sequences())).map((r) => r.tokenLogProbs);
          expect(maxDiff(got, await reference(variant, backend))).toBeLessThan(SAME_WEIGHTS_TOL);
        }
      },
      MODEL_TIMEOUT_MS,
    );
  }

  it(
    'fp16 and q4f16 (float16 KV cache and logits) stay close to fp32 and q4 on node and wasm, on the naive and the prefix-sharing paths alike',
    async () => {
      const fp32 = (await (await hubEngine('fp32', 'node')).scoreTokens(sequences())).map((r) => r.tokenLogProbs);
      const naive = await hubEngine('fp16', 'node', 'naive');
      const prefix = await hubEngine('fp16', 'node', 'prefix');
      const got = (await naive.scoreTokens(sequences())).map((r) => r.tokenLogProbs);
      expect(maxDiff(got, fp32)).toBeLessThan(FP16_TOL);
      const wasm = await hubEngine('fp16', 'wasm', 'naive');
      expect(maxDiff((await wasm.scoreTokens(sequences())).map((r) => r.tokenLogProbs), fp32)).toBeLessThan(FP16_TOL);
      // q4f16: MatMulNBits with float16 activations and scales, against q4.
      const q4 = (await (await hubEngine('q4', 'node')).scoreTokens(sequences())).map((r) => r.tokenLogProbs);
      for (const backend of ['node', 'wasm'] as const) {
        const q4f16 = await hubEngine('q4f16', backend, 'naive');
        expect(maxDiff((await q4f16.scoreTokens(sequences())).map((r) => r.tokenLogProbs), q4)).toBeLessThan(FP16_TOL);
      }
      // A guard call through both paths: the prefix path branches float16 KV caches.
      const request = travelInjectionRequest();
      const [a, b] = [await naive.score(request), await prefix.score(request)];
      for (const v of request.variants) expect(maxDiff([a.logProbs.get(v.id)!], [b.logProbs.get(v.id)!])).toBeLessThan(FP16_PATHS_TOL);
      expect(b.computedTokens).toBeLessThan(a.computedTokens);
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'exposes the attention rows of the standard export: equal to EdgeArmor\'s attention outputs for the same weights',
    async () => {
      for (const variant of ['fp32', 'q4'] as const) {
        const engine = await hubEngine(variant, 'node');
        expect(engine.info).toMatchObject({ attention: true, attentionSource: 'adapter', attentionUnavailable: null });
        const file = variant === 'fp32' ? 'model.onnx' : 'model_q4.onnx';
        const session = await createOrtSession(new Uint8Array(readFileSync(`${TINY}onnx/${file}`)), { backend: 'node' });
        const seqs = sequences().map((s) => ({ ...s, withAttention: true }));
        const want = await scoreSequences(session, dims, seqs);
        await session.release();
        const got = await engine.scoreTokens(seqs);
        got.forEach((r, i) => {
          expect(r.attention!.dims).toEqual(want[i]!.attention!.dims);
          const diff = Math.max(...Array.from(r.attention!.data, (v, k) => Math.abs(v - want[i]!.attention!.data[k]!)));
          expect(diff).toBeLessThan(1e-5);
        });
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'guards with a hub model: MindGuard runs on the adapted attention, or falls back with the reason when the adapter is off',
    async () => {
      const c = findCase('banking', 'poisoning', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const guard = createNodeGuard({ modelDir: HUB, modelVariant: 'q4', backends: ['node'] });
      try {
        expect(await guard.ready).toMatchObject({ model: 'tiny-proxy-hub', variant: 'q4', attention: true });
        const verdict = await guard.check(input);
        expect(verdict.reason).toBe('model');
        expect(verdict.toolPoisoning!.attention).not.toBeNull();
        expect(verdict.toolPoisoning!.unavailable).toEqual([]);
      } finally {
        await guard.dispose();
      }
      const files = await loadModelFiles(directoryReader(HUB), 'q4');
      const plain = await createEngine(files, { backend: 'node', exposeAttention: false });
      engines.push(plain);
      expect(plain.info).toMatchObject({ attention: false, attentionSource: null, attentionUnavailable: 'the attention adapter is turned off (exposeAttention: false)' });
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'renders with a chat template the caller gives: a template refusing tool turns fails typed and blocks, one writing them scores and gives MindGuard its positions',
    async () => {
      const c = findCase('travel', 'injection', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const strict = createNodeGuard({ modelDir: HUB, modelVariant: 'q4', backends: ['node'], chatTemplate: STRICT_TEMPLATE });
      const fixed = createNodeGuard({ modelDir: HUB, modelVariant: 'q4', backends: ['node'], chatTemplate: TOOL_TURNS_TEMPLATE });
      const broken = createNodeGuard({ modelDir: HUB, modelVariant: 'q4', backends: ['node'], chatTemplate: '{% for m in messages %}' });
      try {
        const refused = await strict.check(input);
        expect(refused).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'inference-failed' } });
        expect(refused.error!.message).toMatch(/chat template \(rendering "custom-template"\) could not render this conversation: Conversation roles must alternate/);
        const scored = await fixed.check(input);
        expect(scored).toMatchObject({ reason: 'model', rendering: 'custom-template' });
        expect(scored.attribution!.variants.map((v) => v.id)).toEqual(expect.arrayContaining(['full', 'no-user', 'no-span:0']));
        // The adapter exposes attention and the render gives the tools' and argument values' positions: MindGuard reads them.
        expect(scored.toolPoisoning!.attention).not.toBeNull();
        expect(scored.toolPoisoning!.unavailable.join()).not.toMatch(/no token positions/);
        await expect(broken.ready).rejects.toThrow(/Invalid option chatTemplate: it cannot render a one-message conversation/);
      } finally {
        await Promise.all([strict.dispose(), fixed.dispose(), broken.dispose()]);
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it('reports fused attention and unidentifiable layers instead of guessing', () => {
    const hub = new Uint8Array(readFileSync(`${HUB}onnx/model_q4.onnx`));
    const fused = appendToGraph(hub, { node: [{ op_type: 'GroupQueryAttention', domain: 'com.microsoft', input: ['a'], output: ['b'] }] });
    expect(exposeAttention(fused, 2)).toEqual({ ok: false, reason: 'fused attention (GroupQueryAttention) computes its softmax inside one kernel, so no attention rows can be read' });
    expect(exposeAttention(hub, 3)).toMatchObject({ ok: false, reason: 'found 2 Softmax nodes for 3 layers, so the attention of each layer cannot be told apart' });
    expect(exposeAttention(new Uint8Array(readFileSync(`${TINY}onnx/model.onnx`)), 2)).toMatchObject({ ok: false, native: true });
    expect(exposeAttention(Uint8Array.of(0xff, 0xff, 0xff), 2)).toMatchObject({ ok: false, reason: expect.stringMatching(/not a readable ONNX ModelProto/) });
  });

  it(
    'scores an export without a position_ids input (positions from the mask) as the one with it, on both paths',
    async () => {
      const nopos = await createEngine(await loadModelFiles(directoryReader(NOPOS), 'q4'), { backend: 'node' });
      const naive = await createEngine(await loadModelFiles(directoryReader(NOPOS), 'q4'), { backend: 'node', scoring: 'naive' });
      engines.push(nopos, naive);
      const withPositions = await hubEngine('q4', 'node');
      const want = (await withPositions.scoreTokens(sequences())).map((r) => r.tokenLogProbs);
      expect(maxDiff((await naive.scoreTokens(sequences())).map((r) => r.tokenLogProbs), want)).toBeLessThan(SAME_WEIGHTS_TOL);
      // The prefix path feeds [past | masked gap | padding | new tokens]: positions must skip the gap.
      const request = travelInjectionRequest();
      const [a, b] = [await withPositions.score(request), await nopos.score(request)];
      for (const v of request.variants) expect(maxDiff([a.logProbs.get(v.id)!], [b.logProbs.get(v.id)!])).toBeLessThan(SAME_WEIGHTS_TOL);
    },
    MODEL_TIMEOUT_MS,
  );

  it('names a variant the model lacks and a variant that does not exist', async () => {
    await expect(loadModelFiles(directoryReader(TINY), 'fp16')).rejects.toThrow(ModelLoadError);
    await expect(loadModelFiles(directoryReader(TINY), 'fp16')).rejects.toThrow(/"tiny-proxy" has no fp16 variant \(onnx\/model_fp16\.onnx is not in its manifest\); it has: fp32, q4/);
    await expect(loadModelFiles(directoryReader(HUB), 'int3' as never)).rejects.toThrow(InvalidOptionsError);
  });

  it('sizes memory by every position when the model returns all logits', () => {
    const keepOnly = estimateForwardBytes(dims, 2, 0, 100, 5);
    const all = estimateForwardBytes({ ...dims, fullLogits: true }, 2, 0, 100, 5);
    expect(all - keepOnly).toBe(2 * 95 * dims.vocabSize * 12);
  });

  it('widens float16 bit patterns exactly', () => {
    const bits = Uint16Array.of(0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00, 0xfc00, 0x3555);
    const f = float16ToFloat32(bits);
    expect(Array.from(f.subarray(0, 7))).toEqual([1, -2, 65504, 2 ** -24, -0, Infinity, -Infinity]);
    expect(f[7]).toBeCloseTo(0.33325, 5);
    expect(Number.isNaN(float16ToFloat32(Uint16Array.of(0x7e00))[0])).toBe(true);
  });
});
