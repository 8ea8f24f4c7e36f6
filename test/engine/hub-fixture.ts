/**
 * The hub-layout fixture (test/fixtures/tiny-proxy-hub) and the sequences and guard request its tests score,
 * shared by hub-model.test.ts and logits-adapter.test.ts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildContext } from '../../src/core/context.js';
import { resolveOptions } from '../../src/core/options.js';
import { buildVariants } from '../../src/core/variants.js';
import { type ScoreRequest } from '../../src/engine/engine.js';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import type { ModelDims, ScoreSequence } from '../../src/engine/scorer.js';
import { findCase } from '../../src/scenarios/index.js';

export const HUB = fileURLToPath(new URL('../fixtures/tiny-proxy-hub/', import.meta.url));
export const TINY = fileURLToPath(new URL('../fixtures/tiny-proxy/', import.meta.url));
export const NOPOS = fileURLToPath(new URL('../fixtures/tiny-proxy-hub-nopos/', import.meta.url));

const config = JSON.parse(readFileSync(`${TINY}config.json`, 'utf8')) as Record<string, number>;
/** The tiny model's dimensions (the hub fixture has the same weights). */
export const dims: ModelDims = dimsFromConfig(config, config['pad_token_id']!);

/** Three seeded sequences of 41-91 context tokens and 4-6 action tokens, ids within `vocabSize`. */
export function sequences(vocabSize = dims.vocabSize): ScoreSequence[] {
  let s = 7;
  const next = () => ((s = (s * 1664525 + 1013904223) >>> 0), 16 + (s % (vocabSize - 16)));
  return [40, 90, 17].map((n, i) => ({ context: [0, ...Array.from({ length: n }, next)], action: Array.from({ length: 4 + i }, next) }));
}

/** The engine request of the demo's travel / injection case: every leave-one-out variant, tool descriptions included unless told. */
export function travelInjectionRequest(toolLeaveOneOut = true): ScoreRequest {
  const c = findCase('travel', 'injection', 1)!;
  const context = buildContext({ messages: c.messages, action: c.action, tools: c.tools } as never, resolveOptions());
  return { context, variants: buildVariants(context, { toolLeaveOneOut }), actionText: 'template', withAttention: false };
}

/** The largest absolute difference between two lists of log-prob rows. */
export const maxDiff = (a: Float64Array[], b: Float64Array[]): number => Math.max(...a.flatMap((x, i) => Array.from(x, (v, j) => Math.abs(v - b[i]![j]!))));
