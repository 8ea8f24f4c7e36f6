/**
 * The logits adapter (src/engine/logits-adapter.ts): a standard export without num_logits_to_keep gets one, the
 * rewritten graph scores exactly as the original on every hub variant, backend and path, and a pass returns
 * logits for the kept positions only, on the tiny hub fixture and on a decoder with Qwen2.5's vocabulary.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Tensor } from 'onnxruntime-web';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { findLmHead, KEEP_INPUT, keepLogits } from '../../src/engine/logits-adapter.js';
import { loadModelFiles, type ModelVariant } from '../../src/engine/model-files.js';
import { readModel, type ModelProto, type ReadNode } from '../../src/engine/onnx-proto.js';
import { createOrtSession, type Backend, type OrtSession } from '../../src/engine/ort-session.js';
import { scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import type { ModelDims, ScoreSequence } from '../../src/engine/scorer.js';
import { bigVocabFixture, PYTHON } from '../../lab/bench/big-vocab.js';
import { requirement } from '../requirements.js';
import { defaultWindowTokens } from '../../src/core/window-budget.js';
import { createNodeGuard } from '../../src/node.js';
import { dims, HUB, maxDiff, sequences, TINY, travelInjectionRequest } from './hub-fixture.js';

const MODEL_TIMEOUT_MS = 180_000;
/** The same float32 graph with fewer LM-head rows: only the batch shapes the two plans choose differ. */
const FP32_TOL = 1e-5;
/** float16 rounding differs with batch shape (padding, chunking), which the two plans choose differently. */
const FP16_TOL = 5e-3;
const VARIANTS: ReadonlyArray<{ variant: ModelVariant; file: string; head: string; tol: number }> = [
  { variant: 'fp32', file: 'model.onnx', head: '/MatMul', tol: FP32_TOL },
  { variant: 'fp16', file: 'model_fp16.onnx', head: '/MatMul', tol: FP16_TOL },
  { variant: 'q4', file: 'model_q4.onnx', head: '/MatMul_Q4', tol: FP32_TOL },
  { variant: 'q4f16', file: 'model_q4f16.onnx', head: '/MatMul_Q4', tol: FP16_TOL },
];
/** Tokens of the long check on the big-vocabulary model, as a ~5k-token guard call. */
const LONG_CHECK_TOKENS = 5000;

const hasTorch = requirement(
  spawnSync(PYTHON, ['-c', 'import torch, onnx'], { stdio: 'ignore' }).status === 0,
  `${PYTHON} with torch and onnx (.ci/run installs python3-torch and python3-onnx)`,
);

/** A session whose passes are recorded: the num_logits_to_keep fed, the new tokens and the logits rows returned. */
function recording(session: OrtSession): { session: OrtSession; passes: Array<{ batch: number; keep: number; tokens: number; rows: number }> } {
  const passes: Array<{ batch: number; keep: number; tokens: number; rows: number }> = [];
  return {
    passes,
    session: {
      ...session,
      run: async (feeds: Record<string, Tensor>, fetches?: readonly string[]) => {
        const out = await session.run(feeds, fetches);
        const [batch, tokens] = feeds['input_ids']!.dims as [number, number];
        const keep = feeds[KEEP_INPUT] ? Number((feeds[KEEP_INPUT].data as BigInt64Array)[0]) : 0;
        passes.push({ batch, keep, tokens, rows: out['logits']!.dims[1]! });
        return out;
      },
    },
  };
}

function node(op: string, input: string[], output: string[], domain = ''): ReadNode {
  return { op_type: op, domain, input, output, name: op, span: { start: 0, end: 0 }, graph: 0 };
}

/** A decoder tail: hidden -> [Cast] -> head (tied embedding through a Transpose) -> [bias] -> logits. */
function tail(options: { head?: string; weight?: string; rank?: number; extraReader?: boolean; bias?: 'constant' | 'input' } = {}): ModelProto {
  const nodes = [
    node('Transpose', ['embed'], ['embed_t']),
    node('Cast', ['hidden'], ['hidden16']),
    node(options.head ?? 'MatMul', ['hidden16', options.weight ?? 'embed_t'], ['scores']),
    options.bias ? node('Add', ['scores', options.bias === 'constant' ? 'bias' : 'input_ids'], ['logits']) : node('Cast', ['scores'], ['logits']),
  ];
  if (options.extraReader) nodes.push(node('Identity', ['scores'], ['other']));
  return {
    graph: {
      node: nodes,
      input: [{ name: 'input_ids', rank: 2 }],
      output: [{ name: 'logits', ...(options.rank === undefined ? { rank: 3 } : options.rank < 0 ? {} : { rank: options.rank }) }],
      initializer: [
        { name: 'embed', dims: [100, 8] },
        { name: 'bias', dims: [100] },
      ],
    },
    graphSpans: [],
    opset: [{ domain: '', version: 17 }],
  };
}

describe('logits adapter: num_logits_to_keep for standard exports', () => {
  const engines: ProxyEngine[] = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
  });

  it('finds the LM head of every hub variant and changes only its input', () => {
    for (const { file, head } of VARIANTS) {
      const bytes = new Uint8Array(readFileSync(`${HUB}onnx/${file}`));
      const adapted = keepLogits(bytes);
      expect(adapted).toMatchObject({ ok: true, head });
      if (!adapted.ok) continue;
      const before = readModel(bytes).graph!;
      const after = readModel(adapted.model).graph!;
      expect(after.node).toHaveLength(before.node.length + 3);
      before.node.forEach((n, i) => {
        const m = after.node[i]!;
        expect([m.op_type, m.name, m.output]).toEqual([n.op_type, n.name, n.output]);
        expect(m.input).toEqual(n.name === head ? ['edgearmor/logits/kept', ...n.input.slice(1)] : n.input);
      });
      expect(after.input.map((i) => i.name)).toEqual([...before.input.map((i) => i.name), KEEP_INPUT]);
      expect(after.initializer.slice(0, before.initializer.length)).toEqual(before.initializer);
    }
  });

  it('leaves a graph as it is, with the reason, when the LM head is not one it can prove', () => {
    expect(keepLogits(new Uint8Array(readFileSync(`${TINY}onnx/model.onnx`)))).toEqual({ ok: false, reason: 'the model has a num_logits_to_keep input already', native: true });
    expect(keepLogits(Uint8Array.of(0xff, 0xff, 0xff))).toMatchObject({ ok: false, reason: expect.stringMatching(/not a readable ONNX ModelProto/) });
    expect(findLmHead(tail())).toMatchObject({ head: { op_type: 'MatMul' } });
    expect(findLmHead(tail({ bias: 'constant' }))).toMatchObject({ head: { op_type: 'MatMul' } });
    expect(findLmHead(tail({ head: 'MatMulNBits' }))).toEqual({ reason: 'the node computing "logits" is MatMulNBits ("MatMulNBits"), not a MatMul or MatMulNBits LM head' });
    expect(findLmHead(tail({ head: 'Gemm' }))).toEqual({ reason: 'the node computing "logits" is Gemm ("Gemm"), not a MatMul or MatMulNBits LM head' });
    expect(findLmHead(tail({ weight: 'input_ids' }))).toEqual({ reason: 'the LM head "MatMul" has weights that are not constant (computed from the graph\'s inputs, or initializers a feed may override), so its rows cannot be told apart' });
    // An initializer listed as a graph input (old IR versions list them all) can be fed: not a constant weight.
    const overridable = tail();
    overridable.graph!.input.push({ name: 'embed', rank: 2 });
    expect(findLmHead(overridable)).toMatchObject({ reason: expect.stringMatching(/^the LM head "MatMul" has weights that are not constant/) });
    expect(findLmHead(tail({ bias: 'input' }))).toEqual({ reason: 'the Add node "Add" before "logits" does not add a constant bias' });
    expect(findLmHead(tail({ rank: 2 }))).toEqual({ reason: 'the "logits" output is declared with rank 2, not [batch, sequence, vocabulary]' });
    expect(findLmHead(tail({ rank: -1 }))).toEqual({ reason: 'the "logits" output is declared with no shape, not [batch, sequence, vocabulary]' });
    expect(findLmHead(tail({ extraReader: true }))).toEqual({ reason: '"scores", between the LM head and "logits", is also read elsewhere' });
  });

  for (const backend of ['node', 'wasm'] as const satisfies readonly Backend[]) {
    it(
      `${backend}: every hub variant's rewritten graph scores as the original, on the naive and the prefix path`,
      async () => {
        // Leave-one-out of the user request and each tool result (not of each tool description: the suite's time).
        const request = travelInjectionRequest(false);
        for (const { variant, tol } of VARIANTS) {
          const files = await loadModelFiles(directoryReader(HUB), variant);
          const base = { backend, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) };
          const limited = await createEngine(files, { ...base, scoring: 'prefix' });
          const full = await createEngine(files, { ...base, scoring: 'prefix', limitLogits: false });
          expect(limited.info).toMatchObject({ logitsSource: 'adapter', logitsUnavailable: null, attentionSource: 'adapter' });
          expect(full.info).toMatchObject({ logitsSource: null, logitsUnavailable: 'the logits adapter is turned off (limitLogits: false)' });
          // Raw sequences run on the naive path; guard calls on the prefix path.
          const want = (await full.scoreTokens(sequences())).map((r) => r.tokenLogProbs);
          expect(maxDiff((await limited.scoreTokens(sequences())).map((r) => r.tokenLogProbs), want)).toBeLessThan(tol);
          const [a, b] = [await limited.score(request), await full.score(request)];
          for (const v of request.variants) expect(maxDiff([a.logProbs.get(v.id)!], [b.logProbs.get(v.id)!]), `${variant} ${v.id}`).toBeLessThan(tol);
          await Promise.all([limited.dispose(), full.dispose()]);
        }
      },
      MODEL_TIMEOUT_MS,
    );
  }

  it(
    'returns logits rows for the kept positions only: rows x keep, not rows x sequence',
    async () => {
      const bytes = new Uint8Array(readFileSync(`${HUB}onnx/model_q4.onnx`));
      const adapted = keepLogits(bytes);
      if (!adapted.ok) throw new Error(adapted.reason);
      const seqs = sequences();
      const original = recording(await createOrtSession(bytes, { backend: 'node' }));
      const limited = recording(await createOrtSession(adapted.model, { backend: 'node' }));
      try {
        const all = await scoreSequencesShared(original.session, { ...dims, fullLogits: true }, seqs);
        const kept = await scoreSequencesShared(limited.session, dims, seqs);
        expect(maxDiff(kept.results.map((r) => r.tokenLogProbs), all.results.map((r) => r.tokenLogProbs))).toBeLessThan(FP32_TOL);
        // Each sequence's row (after the shared first token) returns its action's rows and the one before them; the original every row.
        const rows = (passes: typeof limited.passes) => passes.reduce((a, p) => a + p.batch * p.rows, 0);
        for (const p of limited.passes) expect(p.rows).toBe(Math.min(p.keep, p.tokens));
        for (const p of original.passes) expect([p.keep, p.rows]).toEqual([0, p.tokens]);
        expect(kept.stats.logitRows).toBe(rows(limited.passes));
        expect(kept.stats.logitRows).toBe(seqs.reduce((a, q) => a + q.action.length + 1, 0));
        expect(all.stats.logitRows).toBe(rows(original.passes));
        expect(all.stats.logitRows).toBe(all.stats.computedTokens);
      } finally {
        await Promise.all([original.session.release(), limited.session.release()]);
      }
    },
    MODEL_TIMEOUT_MS,
  );

  describe.skipIf(!hasTorch)('a decoder with Qwen2.5\'s vocabulary (151,936 ids, hidden 32, built by lab/model/make_big_vocab_fixture.py)', () => {
    it(
      'the rewritten graph scores as the original, and a 5k-token check computes logits for the kept positions only',
      async () => {
        const dir = bigVocabFixture();
        const files = await loadModelFiles(directoryReader(dir), 'fp32');
        const bigDims: ModelDims = dimsFromConfig(files.config, 2);
        expect(bigDims.vocabSize).toBe(151_936);
        const limited = await createEngine(files, { backend: 'node' });
        const full = await createEngine(files, { backend: 'node', limitLogits: false });
        engines.push(limited);
        expect(limited.info.logitsSource).toBe('adapter');
        // The guard reports no full logits, and scores in a window of the memory and time budgets, not the 32k position limit.
        const guard = createNodeGuard({ modelDir: dir, modelVariant: 'fp32', backends: ['node'] });
        try {
          const status = await guard.ready;
          expect(status).toMatchObject({ maxContextTokens: 32_768, logitsUnavailable: null, windowTokens: defaultWindowTokens(limited.info.shape!, 30_000) });
          expect(status.windowTokens).toBeLessThan(32_768);
        } finally {
          await guard.dispose();
        }
        const short = sequences(bigDims.vocabSize);
        const want = (await full.scoreTokens(short)).map((r) => r.tokenLogProbs);
        expect(maxDiff((await limited.scoreTokens(short)).map((r) => r.tokenLogProbs), want)).toBeLessThan(FP32_TOL);
        await full.dispose();

        // A check's variants: the full context, and leave-one-out of the user request and two 500-token results.
        let s = 11;
        const next = () => ((s = (s * 1664525 + 1013904223) >>> 0), 16 + (s % (bigDims.vocabSize - 16)));
        const context = [0, ...Array.from({ length: LONG_CHECK_TOKENS - 13 }, next)];
        const action = Array.from({ length: 12 }, next);
        const without = (from: number, to: number) => [...context.slice(0, from), ...context.slice(to)];
        const check: ScoreSequence[] = [context, without(100, 150), without(1000, 1500), without(3000, 3500)].map((c) => ({ context: c, action }));
        const adapted = keepLogits(files.onnx);
        if (!adapted.ok) throw new Error(adapted.reason);
        const { session, passes } = recording(await createOrtSession(adapted.model, { backend: 'node', externalData: files.externalData }));
        try {
          const { results, stats } = await scoreSequencesShared(session, bigDims, check);
          for (const r of results) for (const lp of r.tokenLogProbs) expect(Number.isFinite(lp) && lp < 0).toBe(true);
          // Every pass returned min(keep, new tokens) rows per batch row: a chunk of the context 1, the last chunk the action's.
          for (const p of passes) expect(p.rows).toBe(Math.min(p.keep, p.tokens));
          expect(stats.logitRows).toBe(passes.reduce((a, p) => a + p.batch * p.rows, 0));
          expect(stats.logitRows).toBeLessThanOrEqual(passes.reduce((a, p) => a + p.batch, 0) * (action.length + 1));
          expect(stats.computedTokens).toBeGreaterThan(LONG_CHECK_TOKENS);
        } finally {
          await session.release();
        }
      },
      MODEL_TIMEOUT_MS,
    );
  });
});
