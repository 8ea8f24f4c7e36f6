/**
 * The prefix-sharing path (prefix-scorer.ts) against the naive reference (scorer.ts) at the token-id level,
 * on the committed tiny-proxy fixture, on onnxruntime-node and onnxruntime-web (wasm, one thread): same
 * action log-probs within 1e-4, computed tokens equal to the token trie's minimum, and the same results
 * when a small byte budget splits the work into many micro-batches and chunks.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Tensor } from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dimsFromConfig } from '../../src/engine/model-config';
import { createOrtSession, type Backend, type OrtSession } from '../../src/engine/ort-session';
import { DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_CHUNK_TOKENS, defaultBatchBytes, minimumBudgetBytes, scoreSequencesShared, trieMinimumTokens } from '../../src/engine/prefix-scorer';
import { estimateForwardBytes } from '../../src/engine/scorer';
import { scoreSequences, type ModelDims, type ScoreSequence } from '../../src/engine/scorer';

const FIXTURE = fileURLToPath(new URL('../fixtures/tiny-proxy/', import.meta.url));
const LOGPROB_TOL = 1e-4;
/** Small enough that every check splits into many micro-batches and chunks its longest rows. */
const SMALL_BUDGET_BYTES = 800_000;

const config = JSON.parse(readFileSync(`${FIXTURE}config.json`, 'utf8')) as Record<string, number>;
const dims: ModelDims = dimsFromConfig(config, config['pad_token_id']!);

/** Deterministic ids in [16, vocab): a message starts with its role marker, as the chat format does. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
const ids = (r: () => number, n: number) => Array.from({ length: n }, () => 16 + Math.floor(r() * (dims.vocabSize - 16)));

interface SyntheticCase {
  sequences: ScoreSequence[];
  ids: string[];
}

/**
 * bos + tool definitions + [system, user, (assistant, tool result) x spans] + action prefix, then the action;
 * variants as src/core/variants.ts builds them: full, no-user, no-span:i, no-tool:name.
 */
function syntheticCase(spans: number, seed: number, withTools: boolean, withAttention = false): SyntheticCase {
  const r = rng(seed);
  const bos = [0];
  const tools = withTools ? [0, 1, 2].map(() => [5, ...ids(r, 12 + Math.floor(r() * 10))]) : [];
  const messages: number[][] = [[6, ...ids(r, 20)], [7, ...ids(r, 10)]];
  const users = new Set([1]);
  const spanIndex: number[] = [];
  for (let i = 0; i < spans; i++) {
    messages.push([8, ...ids(r, 4)]);
    spanIndex.push(messages.length);
    messages.push([9, 10, ...ids(r, 15 + Math.floor(r() * 30))]);
  }
  const actionPrefix = [8, 11];
  const action = ids(r, 6);
  const all = messages.map((_, i) => i);
  const variants: Array<{ id: string; keep: number[]; dropTool?: number }> = [
    { id: 'full', keep: all },
    { id: 'no-user', keep: all.filter((i) => !users.has(i)) },
    ...spanIndex.map((m, i) => ({ id: `no-span:${i}`, keep: all.filter((k) => k !== m) })),
    ...tools.map((_, t) => ({ id: `no-tool:${t}`, keep: all, dropTool: t })),
  ];
  return {
    ids: variants.map((v) => v.id),
    sequences: variants.map((v) => ({
      context: [...bos, ...tools.filter((_, t) => t !== v.dropTool).flat(), ...v.keep.flatMap((i) => messages[i]!), ...actionPrefix],
      action,
      withAttention: withAttention && v.id === 'full',
    })),
  };
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const BACKENDS: Array<{ name: string; backend: Backend }> = [
  { name: 'onnxruntime-node', backend: 'node' },
  { name: 'onnxruntime-web (wasm, 1 thread)', backend: 'wasm' },
];

for (const { name, backend } of BACKENDS) {
  describe(`prefix sharing on ${name}`, () => {
    let session: OrtSession;
    beforeAll(async () => {
      session = await createOrtSession(readFileSync(`${FIXTURE}onnx/model.onnx`), { backend, wasmThreads: 1 });
    });
    afterAll(async () => {
      await session.release();
    });

    for (const spans of [1, 3, 8]) {
      for (const withTools of [false, true]) {
        it(`returns the naive path's log-probs with ${spans} span(s)${withTools ? ' and tool-description variants' : ''}, computing only the trie minimum`, async () => {
          const c = syntheticCase(spans, 100 * spans + (withTools ? 1 : 0), withTools);
          const naive = await scoreSequences(session, dims, c.sequences);
          const shared = await scoreSequencesShared(session, dims, c.sequences);
          c.sequences.forEach((_, i) => expect(maxDiff(shared.results[i]!.tokenLogProbs, naive[i]!.tokenLogProbs)).toBeLessThan(LOGPROB_TOL));
          expect(shared.stats.computedTokens).toBe(shared.stats.trieMinimumTokens);
          expect(shared.stats.computedTokens).toBeLessThan(shared.stats.naiveTokens);
          // Within the default memory budget (`npm run bench` checks it on 100 spans).
          const longest = Math.max(...c.sequences.map((q) => q.context.length + q.action.length));
          expect(shared.stats.peakEstimatedBytes).toBeLessThanOrEqual(defaultBatchBytes(dims, longest, c.sequences[0]!.action.length));
          // Rows in chunks and micro-batches of at most DEFAULT_MAX_CHUNK_TOKENS new tokens: about a pass per sequence plus one per chunk's worth of tokens, never a pass per token.
          expect(shared.stats.forwardPasses).toBeLessThanOrEqual(c.sequences.length + Math.ceil(shared.stats.computedTokens / DEFAULT_MAX_CHUNK_TOKENS));
        });

        it(`gives the one-shot result under a small memory budget with ${spans} span(s)${withTools ? ' and tool variants' : ''}`, async () => {
          const c = syntheticCase(spans, 100 * spans + (withTools ? 1 : 0), withTools);
          const oneShot = await scoreSequencesShared(session, dims, c.sequences);
          const longest = Math.max(...c.sequences.map((s) => s.context.length + s.action.length));
          const budget = Math.max(SMALL_BUDGET_BYTES, minimumBudgetBytes(dims, longest, c.sequences[0]!.action.length));
          const small = await scoreSequencesShared(session, dims, c.sequences, { maxBatchBytes: budget });
          c.sequences.forEach((_, i) => expect(maxDiff(small.results[i]!.tokenLogProbs, oneShot.results[i]!.tokenLogProbs)).toBeLessThan(LOGPROB_TOL));
          // For the smallest and largest cases the floor (minimumBudgetBytes) can exceed the one-shot need: nothing to split.
          if (oneShot.stats.peakEstimatedBytes > budget) expect(small.stats.forwardPasses).toBeGreaterThan(oneShot.stats.forwardPasses);
          if (spans === 3) expect(oneShot.stats.peakEstimatedBytes).toBeGreaterThan(budget);
          expect(small.stats.computedTokens).toBe(small.stats.trieMinimumTokens);
          expect(small.stats.peakEstimatedBytes).toBeLessThanOrEqual(budget);
        });
      }
    }

    it('computes rows longer than maxChunkTokens in chunks of at most that many new tokens, with the one-shot result', async () => {
      const c = syntheticCase(3, 11, true);
      const oneShot = await scoreSequencesShared(session, dims, c.sequences, { maxChunkTokens: 100_000 });
      const passes: number[] = [];
      const recording: OrtSession = { ...session, run: (feeds, fetches) => (passes.push(feeds['input_ids']!.dims[1]!), session.run(feeds, fetches)) };
      const chunked = await scoreSequencesShared(recording, dims, c.sequences, { maxChunkTokens: 16 });
      c.sequences.forEach((_, i) => expect(maxDiff(chunked.results[i]!.tokenLogProbs, oneShot.results[i]!.tokenLogProbs)).toBeLessThan(LOGPROB_TOL));
      expect(chunked.stats.computedTokens).toBe(chunked.stats.trieMinimumTokens);
      expect(passes).toHaveLength(chunked.stats.forwardPasses);
      expect(chunked.stats.forwardPasses).toBeGreaterThan(oneShot.stats.forwardPasses);
      // Every chunk fits (the action rows, 7 here, always fit in the last one), and only full chunks and remainders run.
      expect(Math.max(...passes)).toBeLessThanOrEqual(16);
      expect(passes.filter((s) => s === 16).length).toBeGreaterThan(passes.length / 2);
      // Chunks never recompute a token: the causal keys attended are the same.
      expect(chunked.stats.attendedKeys).toBe(oneShot.stats.attendedKeys);
    });

    it('returns the full variant\'s attention rows as the naive path does when that row runs in chunks', async () => {
      const c = syntheticCase(3, 7, true, true);
      const naive = await scoreSequences(session, dims, c.sequences);
      const chunked = await scoreSequencesShared(session, dims, c.sequences, { maxChunkTokens: 16 });
      const a = chunked.results[0]!.attention!;
      const b = naive[0]!.attention!;
      expect(a.dims).toEqual(b.dims);
      expect(maxDiff(a.data, b.data)).toBeLessThan(LOGPROB_TOL);
      c.sequences.forEach((_, i) => expect(maxDiff(chunked.results[i]!.tokenLogProbs, naive[i]!.tokenLogProbs)).toBeLessThan(LOGPROB_TOL));
    });

    it('feeds GPU-resident caches back as they are, downloads only those it copies prefixes from, and frees them all', async () => {
      // The session stands in for WebGPU's 'gpu-buffer' outputs: present tensors come back as handles whose
      // data must be downloaded (getData) and which must be disposed; fed back, they reach the model unchanged.
      const c = syntheticCase(3, 21, true);
      const plain = await scoreSequencesShared(session, dims, c.sequences, { maxChunkTokens: 16 });
      let created = 0;
      let downloaded = 0;
      let fedBack = 0;
      const live = new Set<object>();
      const real = new WeakMap<object, Tensor>();
      const gpu: OrtSession = {
        ...session,
        run: async (feeds, fetches) => {
          const unwrapped: Record<string, Tensor> = {};
          for (const [name, t] of Object.entries(feeds)) {
            const r = real.get(t);
            if (r) {
              expect(live.has(t)).toBe(true);
              fedBack += 1;
            }
            unwrapped[name] = r ?? t;
          }
          const out = await session.run(unwrapped, fetches);
          for (const name of Object.keys(out)) {
            if (!name.startsWith('present.')) continue;
            const t = out[name]!;
            const handle = {
              location: 'gpu-buffer',
              type: t.type,
              dims: t.dims,
              get data(): never {
                throw new Error('GPU tensors have no host data; call getData()');
              },
              getData: async () => (downloaded++, t.data),
              dispose: () => void live.delete(handle),
            } as unknown as Tensor;
            real.set(handle, t);
            live.add(handle);
            created += 1;
            out[name] = handle;
          }
          return out;
        },
      };
      const onGpu = await scoreSequencesShared(gpu, dims, c.sequences, { maxChunkTokens: 16 });
      c.sequences.forEach((_, i) => expect(maxDiff(onGpu.results[i]!.tokenLogProbs, plain.results[i]!.tokenLogProbs)).toBeLessThan(1e-9));
      expect(fedBack).toBeGreaterThan(0);
      // Downloads: only the full sequence's cache, once, for the branches that copy a prefix of it.
      expect(downloaded).toBe(2 * dims.numLayers);
      expect(created).toBeGreaterThan(downloaded);
      expect(live.size).toBe(0);
    });

    it('refuses a budget or chunk size that is not a positive integer, naming the option', async () => {
      const c = syntheticCase(1, 5, false);
      await expect(scoreSequencesShared(session, dims, c.sequences, { maxChunkTokens: 0 })).rejects.toThrow(/Invalid option maxChunkTokens: received 0; allowed: an integer >= 1/);
      await expect(scoreSequencesShared(session, dims, c.sequences, { maxBatchBytes: 2.5 })).rejects.toThrow(/Invalid option maxBatchBytes: received 2.5/);
    });

    it('returns the attention rows of the full variant exactly as the naive path does', async () => {
      const c = syntheticCase(3, 7, true, true);
      const naive = await scoreSequences(session, dims, c.sequences);
      const shared = await scoreSequencesShared(session, dims, c.sequences);
      const a = shared.results[0]!.attention!;
      const b = naive[0]!.attention!;
      expect(a.dims).toEqual(b.dims);
      expect(maxDiff(a.data, b.data)).toBeLessThan(LOGPROB_TOL);
    });

    it('scores duplicates and a context that is a prefix of another correctly', async () => {
      const r = rng(3);
      const base = ids(r, 40);
      const action = ids(r, 4);
      const sequences: ScoreSequence[] = [
        { context: [0, ...base], action },
        { context: [0, ...base], action },
        { context: [0, ...base.slice(0, 20)], action },
        { context: [0, ...base.slice(0, 20), ...action, 9], action },
      ];
      const naive = await scoreSequences(session, dims, sequences);
      const shared = await scoreSequencesShared(session, dims, sequences, { maxBatchBytes: SMALL_BUDGET_BYTES });
      sequences.forEach((_, i) => expect(maxDiff(shared.results[i]!.tokenLogProbs, naive[i]!.tokenLogProbs)).toBeLessThan(LOGPROB_TOL));
    });
  });
}

describe('trie minimum and memory estimate', () => {
  it('counts the distinct prefixes of the sequences', () => {
    expect(trieMinimumTokens([[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3]])).toBe(5);
    expect(trieMinimumTokens([])).toBe(0);
  });

  it('keeps the default budget at 64 MiB unless the check cannot be held to it, then gives it full chunks', () => {
    expect(defaultBatchBytes(dims, 300, 6)).toBe(DEFAULT_MAX_BATCH_BYTES);
    // The benchmark's model (hidden 256, 4 layers, 2 KV heads of 128, 8 KiB of KV a token): 64 MiB up to 2k tokens.
    const bench: ModelDims = { ...dims, numLayers: 4, numHeads: 2, numKeyValueHeads: 2, headDim: 128, hiddenSize: 256, intermediateSize: 704, vocabSize: 4096 };
    expect(defaultBatchBytes(bench, 2048, 12)).toBe(DEFAULT_MAX_BATCH_BYTES);
    // At 4k its smallest chunk needs more than 64 MiB; the default then fits one full chunk beside the held cache.
    expect(minimumBudgetBytes(bench, 4096, 12)).toBeGreaterThan(DEFAULT_MAX_BATCH_BYTES);
    expect(defaultBatchBytes(bench, 4096, 12)).toBe(4096 * 8 * 1024 + estimateForwardBytes(bench, 1, 4096, DEFAULT_MAX_CHUNK_TOKENS, 13));
    expect(defaultBatchBytes(bench, 4096, 12, 128)).toBe(4096 * 8 * 1024 + estimateForwardBytes(bench, 1, 4096, 128, 13));
    // A chunk size below the smallest chunk cannot lower the budget under what the check needs at least.
    expect(defaultBatchBytes(bench, 4096, 12, 8)).toBe(minimumBudgetBytes(bench, 4096, 12));
  });

  it('grows the forward-pass estimate with batch, past and new tokens', () => {
    const base = estimateForwardBytes(dims, 1, 100, 100, 5);
    expect(estimateForwardBytes(dims, 2, 100, 100, 5)).toBeGreaterThan(base);
    expect(estimateForwardBytes(dims, 1, 200, 100, 5)).toBeGreaterThan(base);
    expect(estimateForwardBytes(dims, 1, 100, 200, 5)).toBeGreaterThan(base);
  });
});
