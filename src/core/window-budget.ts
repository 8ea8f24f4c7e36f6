/**
 * The window a check is scored in when the caller sets none: the model's position limit, or less when memory
 * or time would not allow that much.
 *
 * Hub models take 32k-131k positions, but a check scored in one window that long holds a KV cache and attention
 * rows for every token of it and costs attention over all of them per token: a 5k-token check on a small model is
 * dominated by them. The rule bounds a window by two budgets, from the model's config dims alone:
 *
 * - memory: the prefix path holds the full variant's KV cache while later variants branch from it, and a pass
 *   continuing a row has its past copied in and its presents out, so about 3 caches; each pass of `chunkTokens`
 *   new tokens also holds (3 x heads + 1) float32 attention scores per key (prefix-plan.ts's estimate). So a
 *   window of W tokens costs W x (3 x KV bytes per token + (3 x heads + 1) x chunkTokens x 4) bytes, which must
 *   fit `memoryBytes`.
 * - time: a check of W tokens computes about `checkTokensPerWindowToken` x W tokens on the prefix path (the full
 *   variant once, each ablated variant from its branch point), each costing 2 x the non-embedding parameters
 *   plus attention over on average W / 2 keys (4 x layers x heads x headDim FLOPs per key; the LM head runs on
 *   the action rows only), at `flopsPerSecond`; that must fit `timeShare` of the timeout. Solved for W (a
 *   quadratic). A longer check is scored in several such windows (core/windows.ts), each within the budgets.
 *
 * The window never exceeds the model's limit and never goes below `minTokens` (the embedded model's window: a
 * smaller one would hold little besides the parts every window repeats), so the embedded model keeps its own.
 */

/** What the rule needs of a model: config.json's dims. */
export interface ModelShape {
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  hidden: number;
  intermediate: number;
  /** Bytes of a KV-cache element: 2 for float16 caches (fp16, q4f16), 4 for float32. */
  kvElementBytes: number;
  /** max_position_embeddings. */
  maxPositions: number;
}

/** The budgets a default window is chosen from. */
export interface WindowBudget {
  /** Estimated scoring bytes one window may take. */
  memoryBytes: number;
  /** The check's timeout (the timeoutMs option); null: no time bound. */
  timeoutMs: number | null;
  /** Share of the timeout one window's scoring may take (the rest: tokenizing, planning, a busy machine). */
  timeShare: number;
  /** Assumed throughput of the scoring backend. */
  flopsPerSecond: number;
  /** Tokens a check computes per window token on the prefix path. */
  checkTokensPerWindowToken: number;
  /** New tokens per pass on the prefix path (prefix-plan.ts DEFAULT_MAX_CHUNK_TOKENS). */
  chunkTokens: number;
  /** The smallest window the rule chooses. */
  minTokens: number;
}

/**
 * The default budgets. Memory: 256 MiB of estimated scoring memory (the real peak runs ~1.6-2x the estimate,
 * lab/bench/README.md, so ~0.5 GB). Throughput: 50 GFLOP/s, about half of what onnxruntime-node reached on a
 * 2-core machine (60-108 GFLOP/s in lab/bench/results), since the guard shares its cores with its host. 2.5 tokens
 * per window token: the standard check (2k tokens, 3 spans, 6 variants) computes 0.44x of naive, 2.6 windows.
 */
export const DEFAULT_WINDOW_BUDGET: Readonly<Omit<WindowBudget, 'timeoutMs'>> = Object.freeze({
  memoryBytes: 256 * 2 ** 20,
  timeShare: 0.5,
  flopsPerSecond: 50e9,
  checkTokensPerWindowToken: 2.5,
  chunkTokens: 256,
  minTokens: 1024,
});

/** Parameters of the transformer layers (attention projections and the gated MLP), without embeddings and LM head. */
export function nonEmbeddingParameters(shape: ModelShape): number {
  const attn = shape.heads * shape.headDim;
  const kv = shape.kvHeads * shape.headDim;
  return shape.layers * (2 * shape.hidden * attn + 2 * shape.hidden * kv + 3 * shape.hidden * shape.intermediate);
}

/** Tokens a window may hold within the memory budget. */
export function memoryWindowTokens(shape: ModelShape, budget: Pick<WindowBudget, 'memoryBytes' | 'chunkTokens'>): number {
  const kvPerToken = 2 * shape.layers * shape.kvHeads * shape.headDim * shape.kvElementBytes;
  const attentionPerToken = (3 * shape.heads + 1) * budget.chunkTokens * 4;
  return Math.floor(budget.memoryBytes / (3 * kvPerToken + attentionPerToken));
}

/** Tokens a window may hold for its check to be scored within the time budget (Infinity without a timeout). */
export function timeWindowTokens(shape: ModelShape, budget: Omit<WindowBudget, 'memoryBytes' | 'chunkTokens' | 'minTokens'>): number {
  if (budget.timeoutMs === null) return Infinity;
  const flops = budget.flopsPerSecond * (budget.timeoutMs / 1000) * budget.timeShare;
  const k = budget.checkTokensPerWindowToken;
  // k W (2P + 2 L H D W) = flops: 2 k L H D W^2 + 2 k P W - flops = 0.
  const a = 2 * k * shape.layers * shape.heads * shape.headDim;
  const b = 2 * k * nonEmbeddingParameters(shape);
  return Math.floor((-b + Math.sqrt(b * b + 4 * a * flops)) / (2 * a));
}

/** The window a check is scored in by default: the model's limit, bounded by the memory and time budgets, never below `minTokens` (nor above the limit). */
export function defaultWindowTokens(shape: ModelShape, timeoutMs: number | null, budget: Omit<WindowBudget, 'timeoutMs'> = DEFAULT_WINDOW_BUDGET): number {
  const bounded = Math.min(memoryWindowTokens(shape, budget), timeWindowTokens(shape, { ...budget, timeoutMs }));
  return Math.min(shape.maxPositions, Math.max(budget.minTokens, bounded));
}
