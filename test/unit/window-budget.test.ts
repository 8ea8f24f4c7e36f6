/**
 * The default window (src/core/window-budget.ts) on the published configs of the small instruct models users bring
 * (test/fixtures/hub-configs), the embedded model and the test fixtures.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createConductor } from '../../src/core/conductor.js';
import type { GuardOptions } from '../../src/core/options.js';
import type { CheckScores } from '../../src/core/judge.js';
import type { Scorer, ScorerInfo, ScoreRequest } from '../../src/core/scorer-port.js';
import { DEFAULT_WINDOW_BUDGET, defaultWindowTokens, memoryWindowTokens, nonEmbeddingParameters, timeWindowTokens, type ModelShape } from '../../src/core/window-budget.js';

/** The option registry's default timeoutMs. */
const DEFAULT_TIMEOUT_MS = 30_000;

function shapeOf(path: string, kvElementBytes: number): ModelShape {
  const c = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as Record<string, number>;
  const heads = c['num_attention_heads']!;
  return {
    layers: c['num_hidden_layers']!,
    heads,
    kvHeads: c['num_key_value_heads'] ?? heads,
    headDim: c['head_dim'] ?? c['hidden_size']! / heads,
    hidden: c['hidden_size']!,
    intermediate: c['intermediate_size']!,
    kvElementBytes,
    maxPositions: c['max_position_embeddings']!,
  };
}

const QWEN25 = '../fixtures/hub-configs/qwen2.5-0.5b-instruct.json';
const QWEN3 = '../fixtures/hub-configs/qwen3-0.6b.json';
const SMOLLM2 = '../fixtures/hub-configs/smollm2-135m-instruct.json';
const EMBEDDED = '../../public/models/edgearmor-proxy/config.json';
const TINY_HUB = '../fixtures/tiny-proxy-hub/config.json';

describe('default window from the memory and time budgets', () => {
  it('counts the layers\' parameters and the bytes a window token holds from config dims', () => {
    const qwen = shapeOf(QWEN25, 4);
    // 24 x (2 x 896 x 896 + 2 x 896 x 128 + 3 x 896 x 4864): Qwen2.5-0.5B's 0.36B non-embedding parameters.
    expect(nonEmbeddingParameters(qwen)).toBe(357_826_560);
    // 3 caches of 2 x 24 x 2 x 64 x 4 bytes, and (3 x 14 + 1) scores per key for each of 256 new tokens.
    expect(memoryWindowTokens(qwen, DEFAULT_WINDOW_BUDGET)).toBe(Math.floor(256 * 2 ** 20 / (3 * 24_576 + 43 * 256 * 4)));
  });

  it.each([
    // [config, KV bytes, memory window, time window at 30 s, default at 30 s, default without a timeout]
    ['Qwen2.5-0.5B fp32', QWEN25, 4, 2279, 409, 1024, 2279],
    ['Qwen2.5-0.5B fp16', QWEN25, 2, 3318, 409, 1024, 3318],
    ['Qwen3-0.6B fp32', QWEN3, 4, 363, 326, 1024, 1024],
    ['Qwen3-0.6B fp16', QWEN3, 2, 680, 326, 1024, 1024],
    ['SmolLM2-135M fp32', SMOLLM2, 4, 1608, 1184, 1184, 1608],
    ['SmolLM2-135M fp16', SMOLLM2, 2, 2744, 1184, 1184, 2744],
  ] as const)('%s: golden windows', (_, path, kv, memory, time, atDefault, untimed) => {
    const shape = shapeOf(path, kv);
    expect(memoryWindowTokens(shape, DEFAULT_WINDOW_BUDGET)).toBe(memory);
    expect(timeWindowTokens(shape, { ...DEFAULT_WINDOW_BUDGET, timeoutMs: DEFAULT_TIMEOUT_MS })).toBe(time);
    expect(defaultWindowTokens(shape, DEFAULT_TIMEOUT_MS)).toBe(atDefault);
    expect(defaultWindowTokens(shape, null)).toBe(untimed);
    // Far below the model's position limit (32k-40k, 8k): long checks go through windows.
    expect(untimed).toBeLessThan(shape.maxPositions);
  });

  it('gives a longer timeout a longer window, up to the memory bound', () => {
    const smol = shapeOf(SMOLLM2, 2);
    const windows = [10_000, 30_000, 60_000, 120_000].map((t) => defaultWindowTokens(smol, t));
    expect(windows).toEqual([...windows].sort((a, b) => a - b));
    expect(windows.at(-1)).toBe(memoryWindowTokens(smol, DEFAULT_WINDOW_BUDGET));
  });

  it('keeps the embedded model\'s and the fixtures\' own 1,024-token window', () => {
    for (const path of [EMBEDDED, TINY_HUB]) {
      for (const kv of [2, 4]) {
        const shape = shapeOf(path, kv);
        expect(shape.maxPositions).toBe(1024);
        expect(defaultWindowTokens(shape, DEFAULT_TIMEOUT_MS)).toBe(1024);
        expect(defaultWindowTokens(shape, null)).toBe(1024);
        expect(defaultWindowTokens(shape, 1)).toBe(1024);
      }
    }
  });
});

describe('the conductor scores checks in the default window', () => {
  const CHECK = {
    messages: [
      { role: 'user', content: 'Pay the invoice.' },
      { role: 'tool', tool_name: 'read_doc', content: 'Invoice: 5 EUR to DE89370400440532013000.' },
    ],
    action: { name: 'send_money', arguments: { iban: 'DE89370400440532013000', amount: 5 } },
  };

  /** The window each check's request carried, and the status, for a scorer with (or without) config dims. */
  async function windowOf(options: GuardOptions, shape: ModelShape | undefined): Promise<{ requested: number | undefined; windowTokens: number | null }> {
    const sent: ScoreRequest[] = [];
    const info: ScorerInfo = { backend: 'node', model: 'recording', variant: 'fp32', maxContextTokens: 32_768, maxTextChars: 1e6, scoring: 'prefix', attention: false, attentionUnavailable: 'none here', chatFormat: 'edgearmor', ...(shape ? { shape } : {}) };
    const scorer: Scorer = {
      info,
      async score(request) {
        sent.push(request);
        const scores: CheckScores = { logProbs: new Map(request.variants.map((v) => [v.id, new Float64Array(2).fill(-1)])), layout: { user: [], tools: [], toolResults: [] }, truncation: { droppedToolDefinitions: false, shortenedMessages: {} } };
        return scores;
      },
      dispose: async () => undefined,
    };
    const guard = createConductor(options, { load: async () => ({ scorer, modelOptions: null }) });
    try {
      const { windowTokens } = await guard.ready;
      expect((await guard.check(CHECK)).reason).toBe('model');
      return { requested: sent[0]!.maxContextTokens, windowTokens };
    } finally {
      await guard.dispose();
    }
  }

  it('sends the budget window, lets maxContextTokens choose another up to the model\'s limit, and keeps a scoring server\'s own', async () => {
    const qwen = shapeOf(QWEN25, 4);
    expect(await windowOf({}, qwen)).toEqual({ requested: 1024, windowTokens: 1024 });
    // A longer timeout: the time budget's window (1,535 at 2 minutes), then the memory budget's (2,279).
    expect(await windowOf({ timeoutMs: 120_000 }, qwen)).toEqual({ requested: 1535, windowTokens: 1535 });
    expect(await windowOf({ timeoutMs: 600_000 }, qwen)).toEqual({ requested: 2279, windowTokens: 2279 });
    expect(await windowOf({ maxContextTokens: 4096 }, qwen)).toEqual({ requested: 4096, windowTokens: 1024 });
    expect(await windowOf({}, undefined)).toEqual({ requested: 32_768, windowTokens: 32_768 });
  });
});
