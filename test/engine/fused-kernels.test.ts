/**
 * Fused-kernel decoders (onnxruntime-genai's layouts, built by lab/model/make_fused_fixture.py from the
 * tiny-proxy weights): GroupQueryAttention with and without its rotary inside, MultiHeadAttention, the
 * SimplifiedLayerNormalization family and MatMulNBits. Every variant of a real check, on the naive and the
 * prefix path, on onnxruntime-node and onnxruntime-web (wasm), equals a direct computation of each
 * sequence alone (batch 1, no past, no padding) on the same graph; the same weights in the standard layout
 * (tiny-proxy-hub) give the same log-probs and the same verdict; a fused layout the engine has no exact
 * plan for is refused at load, naming the op.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/minimal.js';
import { afterAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../src/core/errors.js';
import { buildContext } from '../../src/core/context.js';
import { resolveOptions } from '../../src/core/options.js';
import { buildVariants } from '../../src/core/variants.js';
import { createEngine, engineFromParts, type EngineScores, type ProxyEngine, type ScoreRequest } from '../../src/engine/engine.js';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { inspectGraph, readGraphNodes } from '../../src/engine/graph-kind.js';
import { exposeGroupQueryAttention } from '../../src/engine/gqa-attention.js';
import { isFloat16Variant, loadModelFiles, type ModelFiles, type ModelVariant } from '../../src/engine/model-files.js';
import { createOrtSession, type Backend, type OrtSession } from '../../src/engine/ort-session.js';
import { emptyPast, floatValues, scoreSequences, type ScoreResult, type ScoreSequence } from '../../src/engine/scorer.js';
import { scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import { createProxyTokenizer } from '../../src/engine/tokenizer.js';
import { createNodeGuard } from '../../src/node.js';
import type { Verdict } from '../../src/core/verdict.js';
import { findCase } from '../../src/scenarios/index.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}/`, import.meta.url));
const HUB = fixture('tiny-proxy-hub');
const MODEL_TIMEOUT_MS = 180_000;
// The same graph computed in other batch shapes (padding, pasts, chunks): only float rounding differs.
const SAME_GRAPH_TOL = 1e-4;
// Two layouts of the same weights agree to this, relative to the log-prob (at least 1 in magnitude).
const SAME_WEIGHTS_REL_TOL = 1e-3;
const WASM_VARIANTS = 4;
// Two float16 graphs of the same weights (what transformers computes in float32 kept so in both: to_fp16.py) differ by
// float16 rounding alone, mostly of the float16 logits they return as fp16 exports do: each logit is rounded to 2^-11
// relative, and a log-prob (target logit less the log-sum-exp) carries that twice per graph, so the two graphs can
// part by 4 x 2^-11 (about 2e-3) of the logits' scale. Measured on the travel case: 1.5e-3 fp16, 1.1e-3 q4f16 (each
// graph 1.2e-3 to 2.2e-3 from its fp32 export); fp32 and q4 agree to 7e-7.
const FP16_WEIGHTS_REL_TOL = 4 * 2 ** -11;

// float16 rounding differs with the batch shape (padding, pasts, chunks): the paths agree to fp16's precision.
const FP16_PATHS_TOL = 5e-3;

/** Each fused layout, its kind, and the variants it ships (wasm, slower, runs the fp32 and q4f16 ones). */
const LAYOUTS = [
  { dir: 'tiny-proxy-gqa', kind: 'gqa-rotary', variants: ['fp32', 'q4', 'fp16', 'q4f16'] },
  { dir: 'tiny-proxy-gqa-rope', kind: 'gqa', variants: ['fp32'] },
  { dir: 'tiny-proxy-mha', kind: 'mha', variants: ['fp32'] },
] as const;
const WASM_SKIPS: readonly ModelVariant[] = ['q4', 'fp16'];

const wasmOptions = (backend: Backend) => (backend === 'wasm' ? { wasmThreads: 1 } : {});

/** The travel / injection case: every leave-one-out variant, tool descriptions included. */
function travelInjectionRequest(): ScoreRequest {
  const c = findCase('travel', 'injection', 1)!;
  const context = buildContext({ messages: c.messages, action: c.action, tools: c.tools } as never, resolveOptions());
  return { context, variants: buildVariants(context, { toolLeaveOneOut: true }), actionText: 'template', withAttention: false };
}

function logSoftmax(row: Float32Array, target: number): number {
  const max = row.reduce((a, v) => Math.max(a, v), -Infinity);
  const sum = row.reduce((a, v) => a + Math.exp(v - max), 0);
  return row[target]! - max - Math.log(sum);
}

/** One sequence alone through the graph: input_ids [1, L], a mask of ones, positions 0..L-1, an empty past. */
async function direct(session: OrtSession, files: ModelFiles, s: ScoreSequence): Promise<ScoreResult> {
  const dims = dimsFromConfig(files.config, 0);
  if (isFloat16Variant(files.variant)) dims.kvType = 'float16';
  const ids = [...s.context, ...s.action];
  const L = ids.length;
  const feeds = {
    input_ids: session.makeInt64(BigInt64Array.from(ids, BigInt), [1, L]),
    attention_mask: session.makeInt64(new BigInt64Array(L).fill(1n), [1, L]),
    ...(session.inputNames.includes('position_ids') ? { position_ids: session.makeInt64(BigInt64Array.from(ids, (_, i) => BigInt(i)), [1, L]) } : {}),
    ...Object.fromEntries(
      Array.from({ length: dims.numLayers }, (_, l) => ['key', 'value'].map((kv) => [`past_key_values.${l}.${kv}`, emptyPast(session, dims, 1)])).flat(),
    ),
  };
  const logits = (await session.run(feeds, ['logits']))['logits']!;
  const V = logits.dims[2]!;
  const data = floatValues(logits.data as ArrayBufferView, logits.type);
  const n = s.action.length;
  const tokenLogProbs = Float64Array.from(s.action, (t, j) => logSoftmax(data.subarray((L - n - 1 + j) * V, (L - n + j) * V), t));
  return { tokenLogProbs };
}

/** Deep equality with numbers compared to SAME_GRAPH_TOL. */
function expectClose(got: unknown, want: unknown, path: string): void {
  if (typeof want === 'number' && typeof got === 'number') {
    expect(Math.abs(got - want), path).toBeLessThan(SAME_GRAPH_TOL);
  } else if (want !== null && typeof want === 'object' && got !== null && typeof got === 'object') {
    expect(Object.keys(got).sort(), path).toEqual(Object.keys(want).sort());
    for (const [k, v] of Object.entries(want)) expectClose((got as Record<string, unknown>)[k], v, `${path}.${k}`);
  } else expect(got, path).toEqual(want);
}

const relDiff = (a: Float64Array, b: Float64Array) => Math.max(...Array.from(a, (v, j) => Math.abs(v - b[j]!) / Math.max(1, Math.abs(b[j]!))));
const absDiff = (a: Float64Array, b: Float64Array) => Math.max(...Array.from(a, (v, j) => Math.abs(v - b[j]!)));

describe('fused-kernel decoders (onnxruntime-genai layouts)', () => {
  const engines: ProxyEngine[] = [];
  const sessions: OrtSession[] = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
    for (const s of sessions) await s.release();
  });

  async function engineOf(dir: string, variant: ModelVariant, backend: Backend, scoring: 'naive' | 'prefix'): Promise<ProxyEngine> {
    const engine = await createEngine(await loadModelFiles(directoryReader(fixture(dir)), variant), { backend, scoring, ...wasmOptions(backend) });
    engines.push(engine);
    return engine;
  }

  /** An engine whose runner computes each sequence alone with {@link direct}: the reference. */
  async function directEngine(dir: string, variant: ModelVariant, backend: Backend): Promise<ProxyEngine> {
    const files = await loadModelFiles(directoryReader(fixture(dir)), variant);
    const session = await createOrtSession(files.onnx, { backend, ...wasmOptions(backend) });
    sessions.push(session);
    return engineFromParts({
      info: { model: dir, backend, variant, maxContextTokens: 1024, attention: false, attentionSource: null, attentionUnavailable: 'reference', logitsSource: null, logitsUnavailable: 'reference', scoring: null },
      tokenizer: createProxyTokenizer(files),
      run: async (sequences) => {
        const results: ScoreResult[] = [];
        for (const s of sequences) results.push(await direct(session, files, s));
        return { results, computedTokens: 0 };
      },
      dispose: async () => {},
    });
  }

  for (const backend of ['node', 'wasm'] as const) {
    it(
      `${backend}: every variant of a real check, on the naive and the prefix path, equals each sequence computed alone`,
      async () => {
        const full = travelInjectionRequest();
        // wasm runs GroupQueryAttention several times slower than node: there, the first WASM_VARIANTS variants
        // (the full context, without the user, without each of the first spans) keep the test's time.
        const request = backend === 'wasm' ? { ...full, variants: full.variants.slice(0, WASM_VARIANTS) } : full;
        // The standard export's prefix path computes each distinct prefix once: the fused plans must compute as few.
        const standard = await (await engineOf('tiny-proxy-hub', 'fp32', 'node', 'prefix')).score(request);
        for (const { dir, kind, variants } of LAYOUTS) {
          for (const variant of variants) {
            if (backend === 'wasm' && WASM_SKIPS.includes(variant)) continue;
            const tol = isFloat16Variant(variant) ? FP16_PATHS_TOL : SAME_GRAPH_TOL;
            const want = await (await directEngine(dir, variant, backend)).score(request);
            const naive = await engineOf(dir, variant, backend, 'naive');
            const prefix = await engineOf(dir, variant, backend, 'prefix');
            // The logits adapter keeps only the scored positions here too: right-padded rows read theirs from the kept ones.
            expect(naive.info).toMatchObject({ graph: kind, logitsSource: 'adapter' });
            const [a, b] = [await naive.score(request), await prefix.score(request)];
            for (const v of request.variants) {
              const label = `${dir} ${variant} ${v.id}`;
              expect(absDiff(a.logProbs.get(v.id)!, want.logProbs.get(v.id)!), `naive ${label}`).toBeLessThan(tol);
              expect(absDiff(b.logProbs.get(v.id)!, want.logProbs.get(v.id)!), `prefix ${label}`).toBeLessThan(tol);
            }
            // Prefix sharing is kept: single-row passes compute the same tokens as the standard export's batches.
            expect(b.computedTokens).toBe(standard.computedTokens);
            expect(b.computedTokens).toBeLessThan(a.computedTokens);
          }
        }
      },
      MODEL_TIMEOUT_MS,
    );
  }

  it(
    'right-pads GroupQueryAttention batches and continues one row per pass: left padding shifts its positions, batched pasts are refused',
    async () => {
      const files = await loadModelFiles(directoryReader(fixture('tiny-proxy-gqa')), 'fp32');
      const session = await createOrtSession(files.onnx, { backend: 'node' });
      sessions.push(session);
      const dims = dimsFromConfig(files.config, 2);
      let x = 11;
      const next = () => ((x = (x * 1664525 + 1013904223) >>> 0), 16 + (x % 4000));
      const seqs: ScoreSequence[] = [30, 55, 12].map((n) => ({ context: [0, ...Array.from({ length: n }, next)], action: Array.from({ length: 5 }, next) }));
      const alone: ScoreResult[] = [];
      for (const s of seqs) alone.push(await direct(session, files, s));
      const right = await scoreSequences(session, dims, seqs, { padding: 'right' });
      const left = await scoreSequences(session, dims, seqs, { padding: 'left' });
      right.forEach((r, i) => expect(absDiff(r.tokenLogProbs, alone[i]!.tokenLogProbs)).toBeLessThan(SAME_GRAPH_TOL));
      // The shorter rows were left padded: GroupQueryAttention reads them as starting at the padding.
      expect(absDiff(left[0]!.tokenLogProbs, alone[0]!.tokenLogProbs)).toBeGreaterThan(0.01);
      // Variants of one context (a shared prefix, then each its own tail): the prefix path continues them from its cache.
      const prefix = seqs[1]!.context.slice(0, 40);
      const shared = seqs.map((s) => ({ ...s, context: [...prefix, ...s.context.slice(1, 11)] }));
      const sharedAlone: ScoreResult[] = [];
      for (const s of shared) sharedAlone.push(await direct(session, files, s));
      await expect(scoreSequencesShared(session, dims, shared)).rejects.toThrow(/batch_size must be 1 when sequence_length > 1 and past context is given/);
      const single = await scoreSequencesShared(session, dims, shared, { singleRowPasses: true });
      single.results.forEach((r, i) => expect(absDiff(r.tokenLogProbs, sharedAlone[i]!.tokenLogProbs)).toBeLessThan(SAME_GRAPH_TOL));
      expect(single.stats.computedTokens).toBe(single.stats.trieMinimumTokens);
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'right padding reads each row\'s own action logits when the graph keeps only the last positions (num_logits_to_keep)',
    async () => {
      // EdgeArmor's export takes num_logits_to_keep and masks padding anywhere: both paddings must agree.
      const session = await createOrtSession(new Uint8Array(readFileSync(`${fixture('tiny-proxy')}onnx/model.onnx`)), { backend: 'node' });
      sessions.push(session);
      expect(session.inputNames).toContain('num_logits_to_keep');
      const dims = dimsFromConfig(JSON.parse(readFileSync(`${fixture('tiny-proxy')}config.json`, 'utf8')) as Record<string, unknown>, 2);
      let x = 5;
      const next = () => ((x = (x * 1664525 + 1013904223) >>> 0), 16 + (x % 4000));
      const seqs: ScoreSequence[] = [9, 40, 23].map((n, i) => ({ context: [0, ...Array.from({ length: n }, next)], action: Array.from({ length: 3 + 2 * i }, next), withNextToken: true }));
      const left = await scoreSequences(session, dims, seqs, { padding: 'left' });
      const right = await scoreSequences(session, dims, seqs, { padding: 'right' });
      right.forEach((r, i) => {
        expect(absDiff(r.tokenLogProbs, left[i]!.tokenLogProbs)).toBeLessThan(SAME_GRAPH_TOL);
        expect(r.nextToken!.id).toBe(left[i]!.nextToken!.id);
      });
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'the same weights exported both ways give the same log-probs on every variant and the same verdict',
    async () => {
      const request = travelInjectionRequest();
      const pairs: Array<[string, ModelVariant]> = [
        ['tiny-proxy-gqa', 'fp32'],
        ['tiny-proxy-gqa', 'q4'],
        ['tiny-proxy-gqa', 'fp16'],
        ['tiny-proxy-gqa', 'q4f16'],
        ['tiny-proxy-gqa-rope', 'fp32'],
        ['tiny-proxy-mha', 'fp32'],
      ];
      const standard = new Map<ModelVariant, EngineScores>();
      for (const variant of ['fp32', 'q4', 'fp16', 'q4f16'] as const) standard.set(variant, await (await engineOf('tiny-proxy-hub', variant, 'node', 'prefix')).score(request));
      for (const [dir, variant] of pairs) {
        const got = await (await engineOf(dir, variant, 'node', 'prefix')).score(request);
        const want = standard.get(variant)!;
        for (const v of request.variants) expect(relDiff(got.logProbs.get(v.id)!, want.logProbs.get(v.id)!), `${dir} ${variant} ${v.id}`).toBeLessThan(isFloat16Variant(variant) ? FP16_WEIGHTS_REL_TOL : SAME_WEIGHTS_REL_TOL);
      }
      const c = findCase('travel', 'injection', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const verdicts = [];
      for (const dir of ['tiny-proxy-hub', 'tiny-proxy-gqa', 'tiny-proxy-gqa-rope', 'tiny-proxy-mha']) {
        const guard = createNodeGuard({ modelDir: fixture(dir), modelVariant: 'fp32', backends: ['node'] });
        try {
          verdicts.push(await guard.check(input));
        } finally {
          await guard.dispose();
        }
      }
      for (const v of verdicts) {
        expect(v.reason).toBe('model');
        expect(v.decision).toBe(verdicts[0]!.decision);
        expect(v.attribution!.variants.map((x) => x.id)).toEqual(verdicts[0]!.attribution!.variants.map((x) => x.id));
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'reads GroupQueryAttention\'s own softmax output: the attention rows of the standard export of the same weights, on node and wasm, on both paths',
    async () => {
      const full = { ...travelInjectionRequest(), withAttention: true };
      const want = (await (await engineOf('tiny-proxy-hub', 'fp32', 'node', 'prefix')).score(full)).attention!;
      expect(want.dims.rows).toBeGreaterThan(0);
      for (const backend of ['node', 'wasm'] as const) {
        // The rows are the full variant's: on wasm (slower) fewer other variants and one layout keep the test's time.
        const request = backend === 'wasm' ? { ...full, variants: full.variants.slice(0, WASM_VARIANTS) } : full;
        expect(request.variants[0]!.kind).toBe('full');
        for (const scoring of ['naive', 'prefix'] as const) {
          for (const dir of backend === 'wasm' ? ['tiny-proxy-gqa'] : ['tiny-proxy-gqa', 'tiny-proxy-gqa-rope']) {
            const engine = await engineOf(dir, 'fp32', backend, scoring);
            expect(engine.info).toMatchObject({ attention: true, attentionSource: 'adapter', attentionUnavailable: null });
            const got = (await engine.score(request)).attention!;
            expect(got.dims).toEqual(want.dims);
            expect(got.data.reduce((m, v, k) => Math.max(m, Math.abs(v - want.data[k]!)), 0), `${dir} ${backend} ${scoring}`).toBeLessThan(SAME_GRAPH_TOL);
          }
        }
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'runs MindGuard on GroupQueryAttention graphs as on the standard export, and says plainly why a MultiHeadAttention graph has none',
    async () => {
      const c = findCase('banking', 'poisoning', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const verdicts = new Map<string, Verdict>();
      for (const dir of ['tiny-proxy-hub', 'tiny-proxy-gqa', 'tiny-proxy-mha']) {
        const guard = createNodeGuard({ modelDir: fixture(dir), modelVariant: 'fp32', backends: ['node'] });
        try {
          verdicts.set(dir, await guard.check(input));
        } finally {
          await guard.dispose();
        }
      }
      const [hub, gqa, mha] = [verdicts.get('tiny-proxy-hub')!, verdicts.get('tiny-proxy-gqa')!, verdicts.get('tiny-proxy-mha')!];
      expect(hub.toolPoisoning!.attention).not.toBeNull();
      expect(gqa.toolPoisoning!.unavailable).toEqual([]);
      // The same findings, with scores equal up to float rounding.
      expectClose(gqa.toolPoisoning!.attention, hub.toolPoisoning!.attention, 'attention');
      expect(gqa.decision).toBe(hub.decision);
      expect(mha.reason).toBe('model');
      expect(mha.toolPoisoning!.attention).toBeNull();
      expect(mha.toolPoisoning!.unavailable).toContain(
        'attention: fused attention (MultiHeadAttention) computes its softmax inside one kernel, so no attention rows can be read; MindGuard falls back to leave-one-out over tool descriptions',
      );
    },
    MODEL_TIMEOUT_MS,
  );
});

describe('fused layouts without an exact plan', () => {
  const { Writer } = protobuf;
  type Attr = { name: string; i?: number; s?: string };

  /** A ModelProto of one node: enough for the graph inspection, which refuses before any session exists. */
  function modelWith(opType: string, attrs: Attr[], inputs: string[] = ['q', 'k', 'v']): Uint8Array {
    const w = Writer.create();
    w.uint32((7 << 3) | 2).fork(); // graph
    w.uint32((1 << 3) | 2).fork(); // node
    for (const i of inputs) w.uint32((1 << 3) | 2).string(i);
    w.uint32((2 << 3) | 2).string('out');
    w.uint32((4 << 3) | 2).string(opType);
    for (const a of attrs) {
      w.uint32((5 << 3) | 2).fork();
      w.uint32((1 << 3) | 2).string(a.name);
      if (a.i !== undefined) w.uint32((3 << 3) | 0).int64(a.i).uint32((20 << 3) | 0).int32(2);
      if (a.s !== undefined) w.uint32((4 << 3) | 2).bytes(new TextEncoder().encode(a.s)).uint32((20 << 3) | 0).int32(3);
      w.ldelim();
    }
    w.uint32((7 << 3) | 2).string('com.microsoft');
    w.ldelim().ldelim();
    return w.finish();
  }

  const heads = { numHeads: 4, numKeyValueHeads: 2, headDim: 16 };
  const gqa = (extra: Attr[]) => modelWith('GroupQueryAttention', [{ name: 'num_heads', i: 4 }, { name: 'kv_num_heads', i: 2 }, ...extra]);

  it('classifies the supported layouts', () => {
    expect(inspectGraph(gqa([{ name: 'do_rotary', i: 1 }]), heads).kind).toBe('gqa-rotary');
    expect(inspectGraph(gqa([{ name: 'local_window_size', i: -1 }]), heads).kind).toBe('gqa');
    expect(inspectGraph(modelWith('MultiHeadAttention', [{ name: 'num_heads', i: 4 }], ['q', 'k', 'v', '', '', 'bias']), heads).kind).toBe('mha');
    expect(inspectGraph(new Uint8Array(readFileSync(`${HUB}onnx/model_q4.onnx`)), heads)).toEqual({ kind: 'standard', fusedOps: ['MatMulNBits'] });
    expect(inspectGraph(new Uint8Array(readFileSync(`${fixture('tiny-proxy-gqa')}onnx/model.onnx`)), heads)).toEqual({
      kind: 'gqa-rotary',
      fusedOps: ['GroupQueryAttention', 'SimplifiedLayerNormalization', 'SkipSimplifiedLayerNormalization'],
    });
  });

  it('refuses what it cannot score exactly, naming the op, the attribute and the fix', () => {
    const cases: Array<[Uint8Array, RegExp]> = [
      [gqa([{ name: 'sliding_window_cache', i: 1 }]), /GroupQueryAttention keeps a window-sized KV cache \(sliding_window_cache=1\)/],
      [gqa([{ name: 'k_quant_type', s: 'PER_TENSOR' }]), /GroupQueryAttention quantizes its KV cache \(k_quant_type=PER_TENSOR\)/],
      [gqa([{ name: 'causal', i: 0 }]), /GroupQueryAttention is not causal/],
      [modelWith('GroupQueryAttention', [{ name: 'num_heads', i: 8 }, { name: 'kv_num_heads', i: 2 }]), /num_heads=8, kv_num_heads=2 but config\.json says num_attention_heads=4/],
      [modelWith('PagedAttention', []), /PagedAttention is not supported: paged KV caches/],
      [modelWith('MultiHeadAttention', [{ name: 'num_heads', i: 4 }]), /MultiHeadAttention takes neither key_padding_mask nor attention_bias/],
      [modelWith('MultiHeadAttention', [{ name: 'num_heads', i: 4 }], ['q', 'k', 'v', '', '', 'bias', 'past_k', 'past_v']), /MultiHeadAttention keeps its KV cache inside the op/],
    ];
    for (const [model, message] of cases) {
      expect(() => inspectGraph(model, heads)).toThrow(ModelLoadError);
      expect(() => inspectGraph(model, heads)).toThrow(message);
    }
    expect(() => inspectGraph(gqa([{ name: 'sliding_window_cache', i: 1 }]), heads)).toThrow(/cannot score exactly; export the model in the standard layout/);
    // onnxruntime's kernel rotates heads of 16, 32... only: with 8 every pass would fail, so the load does.
    expect(() => inspectGraph(gqa([{ name: 'do_rotary', i: 1 }]), { ...heads, headDim: 8 })).toThrow(/do_rotary=1\), which onnxruntime runs only for a head size that is a multiple of 16, and config\.json's head size is 8/);
    expect(inspectGraph(gqa([]), { ...heads, headDim: 8 }).kind).toBe('gqa');
  });

  it('reads no GroupQueryAttention softmax it cannot attribute to one layer each', () => {
    expect(exposeGroupQueryAttention(gqa([]), 2)).toEqual({ ok: false, reason: 'found 1 GroupQueryAttention nodes for 2 layers, so the attention of each layer cannot be told apart' });
    expect(exposeGroupQueryAttention(gqa([{ name: 'qk_output', i: 1 }]), 1)).toEqual({ ok: false, reason: 'a GroupQueryAttention node already sets qk_output or has an output_qk' });
    const one = exposeGroupQueryAttention(gqa([]), 1);
    expect(one).toMatchObject({ ok: true, probabilities: ['edgearmor/gqa/0/probabilities'] });
    // The node now names its output_qk fourth (two skipped outputs before it) and asks for it after softmax.
    const [node] = readGraphNodes((one as { model: Uint8Array }).model);
    expect(node!.output).toEqual(['out', '', '', 'edgearmor/gqa/0/probabilities']);
    expect(node!.attributes.get('qk_output')).toEqual({ i: 2 });
    expect(node!.attributes.get('num_heads')).toEqual({ i: 4 });
  });

  it(
    'refuses such a model at load, before a session is created',
    async () => {
      const files = await loadModelFiles(directoryReader(fixture('tiny-proxy-gqa')), 'fp32');
      const onnx = gqa([{ name: 'sliding_window_cache', i: 1 }]);
      // Other bytes, so another hash in the manifest (graph inspections are kept by the file's hash).
      const manifest = { ...files.manifest, files: { ...files.manifest.files, 'onnx/model.onnx': { sha256: 'f'.repeat(64), size: onnx.byteLength } } };
      const bad = { ...files, manifest, onnx };
      const err = await createEngine(bad, { backend: 'node' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelLoadError);
      expect(err).toMatchObject({ code: 'model-load-failed', details: { op: 'GroupQueryAttention', attribute: 'sliding_window_cache' } });
    },
    MODEL_TIMEOUT_MS,
  );
});
