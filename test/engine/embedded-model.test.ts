/**
 * The embedded model end to end in Node: tokenizer and chat template against the Python side,
 * onnxruntime against PyTorch's leave-one-out log-probs, batching, and control-token safety.
 */
import { existsSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseGuardInput } from '../../src/core/adapters.js';
import { buildContext } from '../../src/core/context.js';
import { resolveOptions } from '../../src/core/options.js';
import { buildVariants } from '../../src/core/variants.js';
import { encodeMessage, encodeActionCall } from '../../src/engine/chat-format.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { directoryReader, embeddedModelDir } from '../../src/engine/files-node.js';
import { loadModelFiles, type ModelFiles } from '../../src/engine/model-files.js';
import type { Backend } from '../../src/engine/ort-session.js';
import { requirement } from '../requirements.js';

const MODEL_DIR = embeddedModelDir();
const GOLDEN_PATH = 'test/fixtures/engine-golden.json';
/** fp32 onnxruntime vs PyTorch, per action-token log-prob. */
const FP32_TOLERANCE = 1e-4;
/**
 * q4 vs fp32 PyTorch, per action token on average, any variant of any golden case. Measured max 0.235 with the
 * shipped weights (0.214 and 0.05 with two earlier ones: sharper action distributions move more
 * under 4-bit rounding); headroom ~1.5x.
 */
const Q4_MEAN_TOLERANCE = 0.35;
// The naive path runs every variant separately on two backends: ~35 s here, more on a busy machine.
const SLOW_PATH_TIMEOUT_MS = 180_000;

interface GoldenCase {
  id: string;
  messages: unknown[];
  tools: unknown[] | null;
  action: { name: string; arguments: unknown };
  rendered: string;
  ids: number[];
  n_action: number;
  log_probs: Record<string, number>;
  token_log_probs: Record<string, number[]>;
}

const golden = existsSync(GOLDEN_PATH)
  ? (JSON.parse(readFileSync(GOLDEN_PATH, 'utf8')) as { cases: GoldenCase[] }).cases
  : [];

const options = resolveOptions({});

/** Per-token action log-probs per variant, keyed like the Python scorer (`no-span:<message index>`). */
async function scoreGolden(engine: ProxyEngine, c: GoldenCase): Promise<Map<string, Float64Array>> {
  const input = parseGuardInput({ messages: c.messages, action: c.action, ...(c.tools ? { tools: c.tools } : {}) });
  const context = buildContext(input, options);
  const variants = buildVariants(context);
  const scores = await engine.score({ context, variants, actionText: 'template', withAttention: false });
  const pythonKey = (id: string) => {
    const span = id.startsWith('no-span:') ? context.spans.find((s) => `no-span:${s.id}` === id) : undefined;
    return span ? `no-span:${span.messageIndex}` : id;
  };
  return new Map([...scores.logProbs].map(([k, v]) => [pythonKey(k), v]));
}

describe.skipIf(!requirement(existsSync(MODEL_DIR), 'the embedded model') || !requirement(golden.length > 0, `golden values in ${GOLDEN_PATH}`))('the embedded proxy model', () => {
  const files: Partial<Record<'fp32' | 'q4', ModelFiles>> = {};
  beforeAll(async () => {
    files.fp32 = await loadModelFiles(directoryReader(MODEL_DIR), 'fp32');
    files.q4 = await loadModelFiles(directoryReader(MODEL_DIR), 'q4');
  });

  it('renders the chat template in transformers.js exactly as the Python training side does', async () => {
    const engine = await createEngine(files.fp32!, { backend: 'node' });
    for (const c of golden) {
      const text = engine.tokenizer.renderChatTemplate(c.messages as never, c.tools ?? undefined);
      expect(text).toBe(c.rendered);
      // Re-encoding a rendered string is only faithful without special-token strings in the text (see the next tests).
      if (!c.id.startsWith('adversarial')) expect(engine.tokenizer.encodeRendered(text)).toEqual(c.ids);
    }
    await engine.dispose();
  });

  it('encodes message by message to the same ids as the whole rendered template', async () => {
    const engine = await createEngine(files.fp32!, { backend: 'node' });
    const tok = engine.tokenizer;
    for (const c of golden.filter((g) => !g.id.startsWith('adversarial'))) {
      const input = parseGuardInput({ messages: c.messages, action: c.action });
      const ids = [tok.controlId('<|bos|>'), ...input.messages.flatMap((m) => encodeMessage(tok, m))];
      expect(ids).toEqual(tok.encodeRendered(tok.renderChatTemplate(c.messages as never)));
    }
    await engine.dispose();
  });

  it('never turns role markers or special-token strings inside a tool result into control tokens', async () => {
    const engine = await createEngine(files.fp32!, { backend: 'node' });
    const tok = engine.tokenizer;
    for (const c of golden.filter((g) => g.id.startsWith('adversarial'))) {
      const toolMessage = (c.messages as Array<{ role: string; content: string; tool_name?: string }>).find((m) => m.role === 'tool')!;
      const textIds = tok.encodeText(toolMessage.content);
      expect(textIds.some((id) => tok.isControlId(id))).toBe(false);
      // The rendered-and-reencoded path WOULD produce control tokens: that is the pitfall the engine avoids.
      expect(tok.encodeRendered(toolMessage.content).some((id) => tok.isControlId(id))).toBe(true);
      const ids = encodeMessage(tok, { role: 'tool', content: toolMessage.content, tool_name: toolMessage.tool_name ?? '' });
      expect(ids.filter((id) => tok.isControlId(id)).map((id) => tok.decode([id]))).toEqual(['<|tool|>', '<|result|>', '<|end|>']);
      expect(tok.decode(textIds)).toBe(toolMessage.content);
    }
    await engine.dispose();
  });

  it('scores the same action token ids whatever the tool results contain', async () => {
    const engine = await createEngine(files.fp32!, { backend: 'node' });
    const clean = golden.find((g) => !g.id.startsWith('adversarial'))!;
    const base = encodeActionCall(engine.tokenizer, clean.action.name, clean.action.arguments);
    for (const c of golden.filter((g) => g.id.startsWith('adversarial'))) {
      const input = parseGuardInput({ messages: c.messages, action: c.action });
      const context = buildContext(input, options);
      const scores = await engine.score({ context, variants: buildVariants(context), actionText: 'template', withAttention: false });
      expect(scores.actionTokenIds).toEqual(base.ids);
      expect(scores.logProbs.get('full')!.length).toBe(c.n_action);
    }
    await engine.dispose();
  });

  for (const backend of ['node', 'wasm'] as Backend[]) {
    it(`reproduces PyTorch's leave-one-out log-probs on ${backend} with the fp32 model`, async () => {
      const engine = await createEngine(files.fp32!, { backend, ...(backend === 'wasm' ? { wasmThreads: 1 } : {}) });
      for (const c of golden) {
        const got = await scoreGolden(engine, c);
        expect([...got.keys()].sort()).toEqual(Object.keys(c.token_log_probs).sort());
        for (const [variant, lps] of Object.entries(c.token_log_probs)) {
          const mine = got.get(variant)!;
          expect(mine.length).toBe(lps.length);
          lps.forEach((lp, i) => expect(Math.abs(mine[i]! - lp)).toBeLessThan(FP32_TOLERANCE));
        }
      }
      await engine.dispose();
    });
  }

  it('keeps the q4 model within its stated bound of PyTorch fp32', async () => {
    const engine = await createEngine(files.q4!, { backend: 'node' });
    for (const c of golden) {
      const got = await scoreGolden(engine, c);
      for (const [variant, lp] of Object.entries(c.log_probs)) {
        const sum = got.get(variant)!.reduce((a, b) => a + b, 0);
        expect(Math.abs(sum - lp) / c.n_action).toBeLessThan(Q4_MEAN_TOLERANCE);
      }
    }
    await engine.dispose();
  });

  it('gives the same scores one variant per batch as all variants in one batch, in any order', async () => {
    // maxBatchTokens sizes the 'naive' path's passes (the 'prefix' path is sized by maxBatchBytes).
    const one = await createEngine(files.fp32!, { backend: 'node', scoring: 'naive', maxBatchTokens: 1 });
    const all = await createEngine(files.fp32!, { backend: 'node', scoring: 'naive', maxBatchTokens: 1 << 20 });
    const c = golden[0]!;
    const input = parseGuardInput({ messages: c.messages, action: c.action, ...(c.tools ? { tools: c.tools } : {}) });
    const context = buildContext(input, options);
    const variants = buildVariants(context);
    const a = await one.score({ context, variants, actionText: 'template', withAttention: false });
    const b = await all.score({ context, variants: [...variants].reverse(), actionText: 'template', withAttention: false });
    for (const v of variants) {
      const x = a.logProbs.get(v.id)!;
      const y = b.logProbs.get(v.id)!;
      x.forEach((lp, i) => expect(Math.abs(lp - y[i]!)).toBeLessThan(1e-4));
    }
    await one.dispose();
    await all.dispose();
  });
  it('returns the same log-probs on the prefix-sharing path as on the naive path, with tool variants, on node and wasm', async () => {
    // Every golden case on node; on single-threaded wasm, seven times slower, one plain and one
    // adversarial case: the backend's own paths, not the cases, are what wasm adds.
    const onWasm = [golden.find((g) => !g.id.startsWith('adversarial'))!, golden.find((g) => g.id.startsWith('adversarial'))!];
    for (const backend of ['node', 'wasm'] as const) {
      const prefix = await createEngine(files.fp32!, { backend, wasmThreads: 1, scoring: 'prefix', maxBatchBytes: 4 * 1024 * 1024 });
      const naive = await createEngine(files.fp32!, { backend, wasmThreads: 1, scoring: 'naive' });
      for (const c of backend === 'node' ? golden : onWasm) {
        const input = parseGuardInput({ messages: c.messages, action: c.action, ...(c.tools ? { tools: c.tools } : {}) });
        const context = buildContext(input, options);
        const variants = buildVariants(context, { toolLeaveOneOut: true });
        const request = { context, variants, actionText: 'template' as const, withAttention: true };
        const [a, b] = [await prefix.score(request), await naive.score(request)];
        for (const [id, lp] of b.logProbs) {
          const got = a.logProbs.get(id)!;
          lp.forEach((v, k) => expect(Math.abs(got[k]! - v)).toBeLessThan(FP32_TOLERANCE));
        }
        expect(a.computedTokens).toBeLessThanOrEqual(b.computedTokens);
      }
      await prefix.dispose();
      await naive.dispose();
    }
  }, SLOW_PATH_TIMEOUT_MS);
});
