/**
 * Batched teacher-forced scoring: the log-probability of each action token under each context.
 *
 * Sequences are left-padded so every row ends with its action, which lets one `num_logits_to_keep`
 * serve the whole batch: only the action positions' logits are materialised, and log-softmax runs
 * on those rows alone. Graphs whose attention cannot take left padding (GroupQueryAttention reads each row's
 * length off the mask) get right-padded batches instead, `num_logits_to_keep` then covering the earliest
 * action row of the batch. Micro-batches are sized to a token (or byte) budget so memory stays bounded whatever
 * the number of variants.
 */
import type { Tensor } from 'onnxruntime-web';
import { InferenceError } from '../core/errors.js';
import { float16Bits, float16ToFloat32 } from './float16.js';
import type { OrtSession } from './ort-session.js';

/** Model dimensions the scorer needs, from config.json. */
export interface ModelDims {
  numLayers: number;
  numKeyValueHeads: number;
  headDim: number;
  numHeads: number;
  vocabSize: number;
  padTokenId: number;
  /** d_model, for memory estimates; numHeads x headDim when absent. */
  hiddenSize?: number;
  /** MLP width, for memory estimates; 4 x hiddenSize when absent. */
  intermediateSize?: number;
  /** Element type of the KV cache (and logits): float16 for fp16 / q4f16 models. @defaultValue 'float32' */
  kvType?: 'float32' | 'float16';
  /** The model has no num_logits_to_keep input: it returns logits for every position, so batches are sized by them. */
  fullLogits?: boolean;
}

/** Padded tokens per pass of {@link scoreSequences} when no budget is given. */
export const DEFAULT_MAX_BATCH_TOKENS = 8192;

/** Logits bytes a naive micro-batch may materialise when the model returns logits for every position. */
export const FULL_LOGITS_BUDGET_BYTES = 64 * 1024 * 1024;

/** Bytes of a float32 element. */
const F32 = 4;

/** Bytes of K and V for one token across all layers. */
export function kvBytesPerToken(dims: ModelDims): number {
  return 2 * dims.numLayers * dims.numKeyValueHeads * dims.headDim * (dims.kvType === 'float16' ? 2 : F32);
}

/** Estimated peak bytes of one forward pass of `batch` rows, `past` cached and `seq` new positions, `keep` logits rows. */
export function estimateForwardBytes(dims: ModelDims, batch: number, past: number, seq: number, keep: number): number {
  const hidden = dims.hiddenSize ?? dims.numHeads * dims.headDim;
  const inter = dims.intermediateSize ?? 4 * hidden;
  const total = past + seq;
  const kv = batch * (past + total) * kvBytesPerToken(dims);
  // Scores, mask bias and softmax output of one layer are alive together; ORT frees layer by layer.
  const attention = 3 * batch * dims.numHeads * seq * total * F32 + batch * seq * total * F32;
  // Residual, norms, q/k/v/o and the gated MLP's three intermediate tensors of one layer.
  const activations = batch * seq * (6 * hidden + 3 * inter) * F32;
  // A model without num_logits_to_keep returns every position's logits.
  const logits = batch * (dims.fullLogits ? seq : keep) * dims.vocabSize * (F32 + 8);
  return kv + attention + activations + logits;
}

/** A float output's values as float32 (float16 widened). */
export function floatValues(data: ArrayBufferView, type: string): Float32Array {
  if (type === 'float16') return float16ToFloat32(float16Bits(data));
  return data as Float32Array;
}

/** An empty past KV tensor of the model's KV type. */
export function emptyPast(session: OrtSession, dims: ModelDims, batch: number): Tensor {
  const shape = [batch, dims.numKeyValueHeads, 0, dims.headDim];
  return dims.kvType === 'float16' ? session.makeFloat16(new Uint16Array(0), shape) : session.makeFloat32(new Float32Array(0), shape);
}

/** One sequence to score: the context ids and the action ids that follow them. */
export interface ScoreSequence {
  context: readonly number[];
  action: readonly number[];
  /** Return the attention rows of this sequence's action tokens (needs the attention extension). */
  withAttention?: boolean;
  /** Also return the most likely token after the sequence (greedy next token). */
  withNextToken?: boolean;
}

/** Attention rows from the action tokens to every position of their sequence. */
export interface ActionAttention {
  /** [layers][heads][rows][cols], rows = action tokens, cols = context + action positions. */
  data: Float32Array;
  dims: { layers: number; heads: number; rows: number; cols: number };
}

/** Per sequence: one log-prob per action token, and attention rows when asked. */
export interface ScoreResult {
  tokenLogProbs: Float64Array;
  attention?: ActionAttention;
  /** The greedy next token and its log-prob, when asked. */
  nextToken?: { id: number; logProb: number };
}

/** Options for {@link scoreSequences}. */
export interface ScoreOptions {
  /** Upper bound on padded tokens (rows x length) per forward pass. @defaultValue 8192, or none when `maxBatchBytes` is given */
  maxBatchTokens?: number;
  /** Upper bound on a pass's estimated peak bytes ({@link estimateForwardBytes}). @defaultValue none */
  maxBatchBytes?: number;
  /**
   * Where rows are padded: 'left' (every row ends with its action) or 'right' (every row starts at position
   * 0, for GroupQueryAttention graphs; no attention rows). @defaultValue 'left'
   */
  padding?: 'left' | 'right';
  signal?: AbortSignal;
}

/** log-softmax of one logit row, evaluated at `target` (only the action rows are ever normalised). */
export function logSoftmaxAt(logits: Float32Array, offset: number, vocab: number, target: number): number {
  let max = -Infinity;
  for (let i = 0; i < vocab; i++) {
    const v = logits[offset + i]!;
    if (v > max) max = v;
  }
  let sum = 0;
  for (let i = 0; i < vocab; i++) sum += Math.exp(logits[offset + i]! - max);
  return logits[offset + target]! - max - Math.log(sum);
}

/** The greedy token of one logits row and its log-prob. */
export function argmaxRow(logits: Float32Array, offset: number, vocab: number): { id: number; logProb: number } {
  let id = 0;
  for (let i = 1; i < vocab; i++) if (logits[offset + i]! > logits[offset + id]!) id = i;
  return { id, logProb: logSoftmaxAt(logits, offset, vocab, id) };
}

/** The model's KV-cache outputs, `present.N.key` and `present.N.value` for every layer. */
export function presentOutputNames(dims: Pick<ModelDims, 'numLayers'>): string[] {
  return Array.from({ length: dims.numLayers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat();
}

/** Tokens fed to the model when every sequence runs in full (context and action). */
export function totalTokens(sequences: readonly ScoreSequence[]): number {
  return sequences.reduce((a, s) => a + s.context.length + s.action.length, 0);
}

/**
 * Groups sequence indexes (sorted by length) into micro-batches: a batch takes the next sequence while
 * `fits(rows, longest)` holds for it; a sequence that fits nowhere runs alone.
 */
export function planBatches(lengths: readonly number[], fits: (rows: number, longest: number) => boolean): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]!);
  const batches: number[][] = [];
  let cur: number[] = [];
  let curMax = 0;
  for (const i of order) {
    const n = lengths[i]!;
    if (cur.length > 0 && !fits(cur.length + 1, Math.max(curMax, n))) {
      batches.push(cur);
      cur = [];
      curMax = 0;
    }
    cur.push(i);
    curMax = Math.max(curMax, n);
  }
  if (cur.length > 0) batches.push(cur);
  return batches;
}

/** Scores every sequence; results come back in input order. */
export async function scoreSequences(
  session: OrtSession,
  dims: ModelDims,
  sequences: readonly ScoreSequence[],
  options: ScoreOptions = {},
): Promise<ScoreResult[]> {
  const { maxBatchBytes } = options;
  let maxBatchTokens = options.maxBatchTokens ?? (maxBatchBytes === undefined ? DEFAULT_MAX_BATCH_TOKENS : Infinity);
  // Without num_logits_to_keep every position's logits come back: size batches by them (one sequence is the floor).
  if (dims.fullLogits) maxBatchTokens = Math.min(maxBatchTokens, Math.max(1, Math.floor(FULL_LOGITS_BUDGET_BYTES / (dims.vocabSize * 4))));
  const keep = Math.max(0, ...sequences.map((s) => s.action.length)) + 1;
  const fits = (rows: number, longest: number): boolean =>
    rows * longest <= maxBatchTokens && (maxBatchBytes === undefined || estimateForwardBytes(dims, rows, 0, longest, keep) <= maxBatchBytes);
  const results = new Array<ScoreResult>(sequences.length);
  const lengths = sequences.map((s) => s.context.length + s.action.length);
  for (const batch of planBatches(lengths, fits)) {
    options.signal?.throwIfAborted();
    const out = await runBatch(session, dims, batch.map((i) => sequences[i]!), options.padding ?? 'left');
    batch.forEach((i, k) => (results[i] = out[k]!));
  }
  return results;
}

async function runBatch(session: OrtSession, dims: ModelDims, seqs: readonly ScoreSequence[], padding: 'left' | 'right'): Promise<ScoreResult[]> {
  const b = seqs.length;
  const T = Math.max(...seqs.map((s) => s.context.length + s.action.length));
  // Where each row's tokens end along the sequence axis: all at T when left padded.
  const ends = seqs.map((s) => (padding === 'left' ? T : s.context.length + s.action.length));
  // One extra row: the logits at the last context position predict the first action token.
  const keep = Math.max(...seqs.map((s, r) => T - ends[r]! + s.action.length + 1));
  const rows = padding === 'left' && seqs.some((s) => s.withAttention) ? Math.max(...seqs.map((s) => s.action.length)) : 0;
  const ids = new BigInt64Array(b * T).fill(BigInt(dims.padTokenId));
  const mask = new BigInt64Array(b * T);
  const pos = new BigInt64Array(b * T);
  seqs.forEach((s, r) => {
    const full = [...s.context, ...s.action];
    const pad = ends[r]! - full.length;
    for (let j = 0; j < full.length; j++) {
      ids[r * T + pad + j] = BigInt(full[j]!);
      mask[r * T + pad + j] = 1n;
      pos[r * T + pad + j] = BigInt(j);
    }
  });
  const feeds: Record<string, Tensor> = {
    input_ids: session.makeInt64(ids, [b, T]),
    attention_mask: session.makeInt64(mask, [b, T]),
  };
  // Exports without position_ids derive positions from the mask (cumsum - 1): the same values.
  if (session.inputNames.includes('position_ids')) feeds['position_ids'] = session.makeInt64(pos, [b, T]);
  if (session.inputNames.includes('num_logits_to_keep')) {
    feeds['num_logits_to_keep'] = session.makeInt64(BigInt64Array.of(BigInt(keep)), []);
  }
  if (session.inputNames.includes('num_attention_rows')) {
    feeds['num_attention_rows'] = session.makeInt64(BigInt64Array.of(BigInt(rows)), []);
  }
  for (let l = 0; l < dims.numLayers; l++) {
    for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = emptyPast(session, dims, b);
  }
  // Only what is read: on WebGPU the KV outputs stay in GPU buffers, which nobody would release.
  const attentions = rows > 0 ? session.outputNames.filter((n) => n.startsWith('attentions.')) : [];
  const out = await session.run(feeds, ['logits', ...attentions]);
  const logits = out['logits']!;
  const logitData = floatValues(logits.data as ArrayBufferView, logits.type);
  const [, K, V] = logits.dims as [number, number, number];
  return Promise.all(seqs.map(async (s, r) => {
    const n = s.action.length;
    const lp = new Float64Array(n);
    // Logits row K-1 is position T-1; the row's last position predicts the token after it, and action token j
    // is predicted by the position n-j before that.
    const last = K - 1 - (T - ends[r]!);
    for (let j = 0; j < n; j++) lp[j] = logSoftmaxAt(logitData, (r * K + last - n + j) * V, V, s.action[j]!);
    const res: ScoreResult = { tokenLogProbs: lp };
    if (s.withNextToken) res.nextToken = argmaxRow(logitData, (r * K + last) * V, V);
    if (s.withAttention && rows > 0) res.attention = await sliceAttention(out, dims, { row: r, attentionRows: rows, width: T, actionLength: n, length: s.context.length + n });
    return res;
  }));
}

/** An output's data on the host: GPU-resident outputs (preferredOutputLocation 'gpu-buffer') are downloaded explicitly. */
export async function tensorData(t: Tensor): Promise<ArrayBufferView> {
  if (t.location !== undefined && t.location !== 'cpu' && t.location !== 'cpu-pinned') return (await t.getData(true)) as ArrayBufferView;
  return t.data as ArrayBufferView;
}

/** Where one row's action attention sits in a pass's attentions.N outputs [batch, heads, attentionRows, width]. */
export interface AttentionSlice {
  /** The row in the batch. */
  row: number;
  /** Attention rows the pass returned (the batch's longest action). */
  attentionRows: number;
  /** Key positions of the pass (past + new, padding included). */
  width: number;
  /** This row's action tokens: its last rows. */
  actionLength: number;
  /** This row's real key positions: the last `length` columns (padding and gaps sit before them). */
  length: number;
}

/** The one slicer of attention rows, for the naive and the prefix path: [layers][heads][action rows][real columns]. */
export async function sliceAttention(out: Record<string, Tensor>, dims: ModelDims, at: AttentionSlice): Promise<ActionAttention> {
  const { row: r, attentionRows: rows, width: T, actionLength: n, length: len } = at;
  const data = new Float32Array(dims.numLayers * dims.numHeads * n * len);
  for (let l = 0; l < dims.numLayers; l++) {
    const att = out[`attentions.${l}`];
    if (!att) throw new InferenceError(`the model has no attentions.${l} output: attention needs the EdgeArmor export extension`, { output: `attentions.${l}` });
    const a = floatValues(await tensorData(att), att.type);
    for (let h = 0; h < dims.numHeads; h++) {
      for (let i = 0; i < n; i++) {
        const src = ((r * dims.numHeads + h) * rows + (rows - n + i)) * T + (T - len);
        data.set(a.subarray(src, src + len), ((l * dims.numHeads + h) * n + i) * len);
      }
    }
  }
  return { data, dims: { layers: dims.numLayers, heads: dims.numHeads, rows: n, cols: len } };
}
