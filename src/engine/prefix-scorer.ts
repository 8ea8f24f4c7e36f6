/**
 * Prefix-sharing scoring: the same action log-probs as {@link scoreSequences}, computing each distinct
 * token prefix of the variants (the token trie) once.
 *
 * Causal attention makes the KV cache of a prefix independent of what follows it, so one sequence's
 * presents, cut at any position, are the cache of that prefix. The scheduler orders the sequences
 * (the one sharing most with the others first), gives each later sequence the earlier one with which it
 * shares the longest token prefix (its partner), and computes only the tokens after that divergence
 * point, feeding the partner's cache as past_key_values. Computed tokens then equal the trie's node
 * count whatever the order (each sequence adds exactly its prefixes not yet in the trie). Leave-one-out
 * variants all share most with `full`, so a check is two rounds: `full` once, then every branch batched.
 *
 * Batched rows have different past lengths: each row's past sits at the left of the past area, the
 * gap after it and the left padding of the new tokens are masked in attention_mask, and position ids
 * continue from the row's real past length. Micro-batches are sized to a byte budget (KV in and out,
 * attention scores, activations, kept logits); a row longer than the chunk size, or that alone exceeds the
 * budget, runs in chunks, each chunk continuing the previous one's cache, so a long context stays within
 * the bound. Chunking also saves work: a pass scores every new token against every key of its row, and the
 * causal mask discards half of the new-by-new block, so one 2k-token pass computes ~2x the attention a
 * causal pass needs, four 512-token chunks ~1.25x.
 *
 * A cache that is one pass's presents stays as onnxruntime returned it: on WebGPU (presents in GPU buffers)
 * the next chunk of the row gets it as its past without a round trip through the CPU; only a cache that
 * later rows copy a prefix of is downloaded, once. GPU buffers are freed when their last user ran.
 */
import type { Tensor } from 'onnxruntime-web';
import { InferenceError, InvalidOptionsError } from '../core/errors.js';
import { float16Bits } from './float16.js';
import type { OrtSession } from './ort-session.js';
import { estimateForwardBytes, floatValues, kvBytesPerToken, logSoftmaxAt, presentOutputNames, type ActionAttention, type ModelDims, type ScoreResult, type ScoreSequence } from './scorer.js';

/** Options for {@link scoreSequencesShared}. */
export interface PrefixScoreOptions {
  /**
   * Estimated bytes one forward pass may use (past and present KV, attention scores, activations, kept
   * logits) plus the caches held for later rows; micro-batches and chunks are sized to stay under it.
   * @defaultValue {@link defaultBatchBytes}: 64 MiB, more for a check that cannot be held to 64 MiB
   */
  maxBatchBytes?: number;
  /**
   * New tokens per row and pass; longer rows run in chunks (the last one also carries the action rows).
   * Longer chunks waste attention on masked keys, shorter ones pay the per-pass overhead.
   * @defaultValue 512 (on onnxruntime-node, 384-768 were equally fast; bench/README.md)
   */
  maxChunkTokens?: number;
  signal?: AbortSignal;
}

/** What a shared scoring call computed. */
export interface PrefixScoreStats {
  /** Tokens fed to the model (real tokens, padding excluded). */
  computedTokens: number;
  /** Distinct prefixes of the sequences: the fewest tokens exact scoring can compute. */
  trieMinimumTokens: number;
  /** Tokens the naive path computes (every sequence in full). */
  naiveTokens: number;
  /** Forward passes run. */
  forwardPasses: number;
  /** Largest estimated bytes of one forward pass plus held caches. */
  peakEstimatedBytes: number;
  /** Sum over computed tokens of the keys each attends to (past + itself), for FLOP counts. */
  attendedKeys: number;
  /** Logits rows materialised (rows x num_logits_to_keep), for FLOP counts. */
  logitRows: number;
}

/** Results in input order, and what it cost. */
export interface PrefixScoreOutput {
  results: ScoreResult[];
  stats: PrefixScoreStats;
}

/** The byte budget of {@link PrefixScoreOptions.maxBatchBytes} for sequences that fit a full chunk in it. */
export const DEFAULT_MAX_BATCH_BYTES = 64 * 1024 * 1024;

/** Default of {@link PrefixScoreOptions.maxChunkTokens}. */
export const DEFAULT_MAX_CHUNK_TOKENS = 512;

/** Padded / real new tokens a micro-batch may reach before a row goes to the next one. */
const PADDING_SLACK = 1.25;
/** Smallest non-final chunk of a row split to fit the budget. */
const MIN_CHUNK_TOKENS = 64;

/** KV elements: float32 values, or float16 bit patterns for fp16 models (copied, never converted). */
type KvArray = Float32Array | Uint16Array;

type KvLayers = Array<{ key: KvArray; value: KvArray }>;

/** A KV tensor of the stored element type. */
const kvTensor = (session: OrtSession, data: KvArray, shape: readonly number[]): Tensor =>
  data instanceof Uint16Array ? session.makeFloat16(data, shape) : session.makeFloat32(data, shape);

/** The past input one layer's key or value cache feeds. */
const pastName = (layer: number, kv: 'key' | 'value') => `past_key_values.${layer}.${kv}`;

/**
 * A KV cache of one row: per layer, key and value [kvHeads, length, headDim]. A cache that is exactly one
 * pass's present tensors keeps them as onnxruntime returned them (on WebGPU GPU buffers, downloaded only
 * if a later pass must copy a prefix of them); a cache cut out of a batched pass holds host arrays.
 */
class KvCache {
  private host: KvLayers | undefined;

  private constructor(
    readonly length: number,
    /** present.N.key / present.N.value by past input name, when the cache is one pass's presents. */
    private readonly presents: ReadonlyMap<string, Tensor> | undefined,
    host: KvLayers | undefined,
  ) {
    this.host = host;
  }

  static fromPresents(length: number, presents: ReadonlyMap<string, Tensor>): KvCache {
    return new KvCache(length, presents, undefined);
  }

  static fromHost(length: number, layers: KvLayers): KvCache {
    return new KvCache(length, undefined, layers);
  }

  /** The tensor to feed as a layer's past when a pass continues from the whole cache: the present itself where there is one. */
  past(session: OrtSession, dims: ModelDims, layer: number, kv: 'key' | 'value'): Tensor {
    return this.presents?.get(pastName(layer, kv)) ?? kvTensor(session, this.host![layer]![kv], [1, dims.numKeyValueHeads, this.length, dims.headDim]);
  }

  /** Host arrays per layer (downloaded once from the GPU for a GPU-resident cache). */
  async layers(dims: ModelDims): Promise<KvLayers> {
    if (this.host) return this.host;
    const layers: KvLayers = [];
    for (let l = 0; l < dims.numLayers; l++) {
      layers.push({ key: await kvData(this.presents!.get(pastName(l, 'key'))!), value: await kvData(this.presents!.get(pastName(l, 'value'))!) });
    }
    return (this.host = layers);
  }

  /** Frees GPU-resident presents (host memory is left to the garbage collector). */
  dispose(): void {
    for (const t of this.presents?.values() ?? []) if (t.location === 'gpu-buffer') t.dispose();
  }
}

/** One row of a forward pass: new tokens after a past cache. */
interface RowJob {
  past: KvCache | undefined;
  pastLength: number;
  tokens: readonly number[];
  /** Action length when this row's last tokens are the action whose log-probs are wanted; 0 for none. */
  actionLength: number;
  action: readonly number[];
  wantKv: boolean;
  withAttention: boolean;
}

interface RowOutput {
  tokenLogProbs?: Float64Array;
  kv?: KvCache;
  attention?: ActionAttention;
}

/** One held cache of the shared sequence plus one single-row chunk of `chunk` tokens at the longest past. */
function chunkBudgetBytes(dims: ModelDims, maxLength: number, actionLength: number, chunk: number): number {
  const keep = actionLength + 1;
  return maxLength * kvBytesPerToken(dims) + estimateForwardBytes(dims, 1, maxLength, Math.max(keep, chunk), keep);
}

/**
 * The smallest budget a leave-one-out check of sequences up to `maxLength` tokens can honour: one held
 * cache of the shared sequence plus a single-row final chunk carrying the action rows. Below it the scorer
 * still runs, at this bound.
 */
export function minimumBudgetBytes(dims: ModelDims, maxLength: number, actionLength: number): number {
  return chunkBudgetBytes(dims, maxLength, actionLength, MIN_CHUNK_TOKENS);
}

/**
 * The default budget: 64 MiB, unless the check cannot be held to it at all (its smallest chunk needs more,
 * as in a long context whose caches alone exceed it); then what one full chunk at the longest sequence
 * needs. Held to 64 MiB, a 4k-token check of the benchmark's model (which needs ~105 MB at least) crawled
 * in 64-token chunks, hundreds of passes, over budget anyway; with full chunks it takes ~180 MB and half
 * the time.
 */
export function defaultBatchBytes(dims: ModelDims, maxLength: number, actionLength: number, maxChunkTokens = DEFAULT_MAX_CHUNK_TOKENS): number {
  const least = minimumBudgetBytes(dims, maxLength, actionLength);
  if (least <= DEFAULT_MAX_BATCH_BYTES) return DEFAULT_MAX_BATCH_BYTES;
  return Math.max(least, chunkBudgetBytes(dims, maxLength, actionLength, maxChunkTokens));
}

/** Refuses a count or byte option that is given but not an integer >= 1 (options arrive untyped from pages and workers). */
export function checkPositiveIntegerOption(option: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
    throw new InvalidOptionsError(`Invalid option ${option}: received ${JSON.stringify(value)}; allowed: an integer >= 1.`, { option });
  }
}

function lcp(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Distinct non-empty prefixes of the sequences: the token trie's node count. */
export function trieMinimumTokens(sequences: ReadonlyArray<readonly number[]>): number {
  const sorted = [...sequences].sort((a, b) => {
    const n = lcp(a, b);
    if (n === a.length || n === b.length) return a.length - b.length;
    return a[n]! - b[n]!;
  });
  let total = 0;
  sorted.forEach((s, i) => (total += s.length - (i > 0 ? lcp(sorted[i - 1]!, s) : 0)));
  return total;
}

async function tensorData(t: Tensor): Promise<ArrayBufferView> {
  // GPU-resident outputs (preferredOutputLocation 'gpu-buffer') must be downloaded explicitly.
  if (t.location !== undefined && t.location !== 'cpu' && t.location !== 'cpu-pinned') return (await t.getData(true)) as ArrayBufferView;
  return t.data as ArrayBufferView;
}

/** KV output data as stored: float32 values, or float16 bit patterns. */
async function kvData(t: Tensor): Promise<KvArray> {
  const data = await tensorData(t);
  return t.type === 'float16' ? float16Bits(data) : (data as Float32Array);
}

/** Scores every sequence sharing common token prefixes; same results as scoreSequences, in input order. */
export async function scoreSequencesShared(
  session: OrtSession,
  dims: ModelDims,
  sequences: readonly ScoreSequence[],
  options: PrefixScoreOptions = {},
): Promise<PrefixScoreOutput> {
  checkPositiveIntegerOption('maxBatchBytes', options.maxBatchBytes);
  checkPositiveIntegerOption('maxChunkTokens', options.maxChunkTokens);
  const maxChunk = options.maxChunkTokens ?? DEFAULT_MAX_CHUNK_TOKENS;
  const full = sequences.map((s) => [...s.context, ...s.action]);
  const longest = Math.max(0, ...full.map((s) => s.length));
  const longestAction = Math.max(0, ...sequences.map((s) => s.action.length));
  const n = sequences.length;
  const stats: PrefixScoreStats = {
    computedTokens: 0,
    trieMinimumTokens: trieMinimumTokens(full),
    naiveTokens: full.reduce((a, s) => a + s.length, 0),
    forwardPasses: 0,
    peakEstimatedBytes: 0,
    attendedKeys: 0,
    logitRows: 0,
  };
  const results = new Array<ScoreResult>(n);
  if (n === 0) return { results, stats };

  // The first sequence is the one sharing the most with the others (for leave-one-out: `full`).
  const sharing = full.map((s, i) => full.reduce((a, t, j) => (j === i ? a : a + lcp(s, t)), 0));
  const first = sharing.indexOf(Math.max(...sharing));
  const order = [first, ...full.map((_, i) => i).filter((i) => i !== first)];

  const partner = new Array<number>(n).fill(-1);
  const start = new Array<number>(n).fill(0);
  const alias = new Array<number>(n).fill(-1);
  const done: number[] = [];
  for (const i of order) {
    let best = -1;
    let bestLen = 0;
    for (const j of done) {
      const l = lcp(full[i]!, full[j]!);
      if (l > bestLen) {
        best = j;
        bestLen = l;
      }
    }
    const s = sequences[i]!;
    if (best >= 0 && bestLen === full[i]!.length && full[best]!.length === bestLen && s.action.length === sequences[best]!.action.length && !s.withAttention) {
      alias[i] = best;
      continue;
    }
    // The logits predicting the first action token sit at the last context position: compute from there at least.
    // Attention rows span the whole sequence, so a sequence that wants them is computed from its start.
    const limit = s.withAttention ? 0 : Math.max(0, s.context.length - 1);
    start[i] = Math.min(bestLen, limit);
    partner[i] = start[i]! > 0 ? best : -1;
    done.push(i);
  }

  // Rounds: a sequence runs one round after its partner; caches are dropped when their last dependent ran.
  const round = new Array<number>(n).fill(0);
  const dependents = new Array<number>(n).fill(0);
  for (const i of order) {
    if (alias[i]! >= 0) continue;
    if (partner[i]! >= 0) {
      round[i] = round[partner[i]!]! + 1;
      dependents[partner[i]!]! += 1;
    }
  }
  const caches = new Map<number, KvCache>();
  const kvTok = kvBytesPerToken(dims);
  const call: Call = {
    session,
    dims,
    stats,
    budget: options.maxBatchBytes ?? defaultBatchBytes(dims, longest, longestAction, maxChunk),
    maxChunk,
    heldBytes: () => [...caches.values()].reduce((a, c) => a + c.length * kvTok, 0),
    pastBuffers: new PastBuffers(),
    signal: options.signal,
  };
  const rounds = Math.max(...round) + 1;
  try {
    await runRounds();
  } finally {
    for (const c of caches.values()) c.dispose();
  }
  alias.forEach((a, i) => {
    if (a >= 0) results[i] = { tokenLogProbs: Float64Array.from(results[a]!.tokenLogProbs) };
  });
  return { results, stats };

  async function runRounds(): Promise<void> {
    for (let r = 0; r < rounds; r++) {
      const members = order.filter((i) => alias[i]! < 0 && round[i] === r);
      const jobs = members.map((i): RowJob => {
        const s = sequences[i]!;
        const p = partner[i]!;
        return {
          past: p >= 0 ? caches.get(p) : undefined,
          pastLength: start[i]!,
          tokens: full[i]!.slice(start[i]!),
          actionLength: s.action.length,
          action: s.action,
          wantKv: dependents[i]! > 0,
          withAttention: s.withAttention === true,
        };
      });
      const outs = await runJobs(call, jobs);
      members.forEach((i, k) => {
        const o = outs[k]!;
        const res: ScoreResult = { tokenLogProbs: o.tokenLogProbs! };
        if (o.attention) res.attention = o.attention;
        results[i] = res;
        if (o.kv) caches.set(i, o.kv);
      });
      for (const i of members) {
        const p = partner[i]!;
        if (p >= 0 && --dependents[p]! === 0) {
          caches.get(p)!.dispose();
          caches.delete(p);
        }
      }
    }
  }
}

/**
 * Reusable past-KV inputs of one scoring call, per input name: a pass that copies its rows' pasts into one
 * tensor writes them here, since the copy is dead once the pass ran. Each copy was fresh memory, tens of
 * MB a check, and the garbage collections it triggered cost the most where the heap is large.
 */
class PastBuffers {
  private readonly buffers = new Map<string, KvArray>();

  /** A view of `length` elements for `name`, holding whatever the last pass left there. */
  get(name: string, length: number, float16: boolean): KvArray {
    let buffer = this.buffers.get(name);
    if (buffer === undefined || buffer.length < length) {
      buffer = float16 ? new Uint16Array(length) : new Float32Array(length);
      this.buffers.set(name, buffer);
    }
    return buffer.subarray(0, length);
  }
}

/** What every pass of one scoring call shares. */
interface Call {
  session: OrtSession;
  dims: ModelDims;
  stats: PrefixScoreStats;
  /** Byte budget of a pass plus the held caches. */
  budget: number;
  /** New tokens per row and pass. */
  maxChunk: number;
  /** Bytes of the caches held for later rows. */
  heldBytes: () => number;
  pastBuffers: PastBuffers;
  signal: AbortSignal | undefined;
}

/** Runs row jobs in micro-batches under the byte budget; rows too long or too big alone run in chunks. */
async function runJobs(call: Call, jobs: readonly RowJob[]): Promise<RowOutput[]> {
  const { dims, budget, maxChunk, heldBytes, stats, signal } = call;
  const outs = new Array<RowOutput>(jobs.length);
  const ord = jobs.map((_, i) => i).sort((a, b) => jobs[a]!.tokens.length - jobs[b]!.tokens.length);
  const keepOf = (j: RowJob) => j.actionLength + 1;
  const cost = (rows: readonly RowJob[]) =>
    estimateForwardBytes(
      dims,
      rows.length,
      Math.max(...rows.map((j) => j.pastLength)),
      Math.max(...rows.map((j) => j.tokens.length)),
      Math.max(...rows.map(keepOf)),
    ) + heldBytes();
  let cur: number[] = [];
  const flush = async () => {
    if (cur.length === 0) return;
    signal?.throwIfAborted();
    const rows = cur.map((i) => jobs[i]!);
    stats.peakEstimatedBytes = Math.max(stats.peakEstimatedBytes, cost(rows));
    const res = await forward(call, rows);
    cur.forEach((i, k) => (outs[i] = res[k]!));
    cur = [];
  };
  for (const i of ord) {
    const job = jobs[i]!;
    if ((job.tokens.length > maxChunk || cost([job]) > budget) && job.tokens.length > keepOf(job)) {
      await flush();
      outs[i] = await runChunked(call, job);
      continue;
    }
    if (cur.length > 0) {
      const rows = [...cur.map((k) => jobs[k]!), job];
      // Rows are padded to the longest: past a PADDING_SLACK of wasted positions, separate passes are cheaper.
      const padded = rows.length * job.tokens.length;
      const real = rows.reduce((a, j) => a + j.tokens.length, 0);
      if (cost(rows) > budget || padded > PADDING_SLACK * real) await flush();
    }
    cur.push(i);
  }
  await flush();
  return outs;
}

/** One row in consecutive chunks, each continuing the previous chunk's cache; the last chunk holds the action rows. */
async function runChunked(call: Call, job: RowJob): Promise<RowOutput> {
  const { dims, budget, maxChunk, heldBytes, stats, signal } = call;
  let past = job.past;
  let pastLength = job.pastLength;
  let offset = 0;
  const keep = job.actionLength + 1;
  for (;;) {
    signal?.throwIfAborted();
    const remaining = job.tokens.length - offset;
    // The largest chunk that fits (at least one token; the final one must carry every action row).
    let size = remaining;
    const fits = (s: number, k: number) => estimateForwardBytes(dims, 1, pastLength, s, k) + heldBytes() <= budget;
    // A final chunk shorter than the action rows cannot carry them: below that the budget yields.
    if (remaining > keep && !fits(remaining, keep)) {
      let lo = 1;
      let hi = remaining - keep;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (fits(mid, 1)) lo = mid;
        else hi = mid - 1;
      }
      // Below MIN_CHUNK_TOKENS per-pass overhead dominates; a budget that small is not honoured (minimumBudgetBytes).
      size = Math.min(Math.max(lo, MIN_CHUNK_TOKENS), remaining - keep);
    }
    // Past maxChunk the row goes on in another chunk, leaving at least the action rows for the last one.
    if (size > maxChunk && remaining > keep) size = Math.max(1, Math.min(maxChunk, remaining - keep));
    const last = offset + size === job.tokens.length;
    const row: RowJob = {
      past,
      pastLength,
      tokens: job.tokens.slice(offset, offset + size),
      actionLength: last ? job.actionLength : 0,
      action: last ? job.action : [],
      wantKv: !last || job.wantKv,
      // The last chunk carries the action rows, so it carries their attention rows too (over the whole cache).
      withAttention: last && job.withAttention,
    };
    stats.peakEstimatedBytes = Math.max(stats.peakEstimatedBytes, estimateForwardBytes(dims, 1, pastLength, size, last ? keep : 1) + heldBytes());
    let out: RowOutput;
    try {
      [out] = (await forward(call, [row])) as [RowOutput];
    } finally {
      // A previous chunk's cache is this row's own; the first past belongs to the caller.
      if (past !== job.past) past?.dispose();
    }
    if (last) return out;
    past = out.kv;
    pastLength += size;
    offset += size;
  }
}

/**
 * One forward pass. Row layout along the key axis: [past (pastLength) | gap | left padding | new tokens],
 * P = the batch's longest past, S = its longest new part; only past and new tokens are unmasked.
 */
async function forward(call: Call, rows: readonly RowJob[]): Promise<RowOutput[]> {
  const { session, dims, stats } = call;
  const b = rows.length;
  const P = Math.max(...rows.map((j) => j.pastLength));
  const S = Math.max(...rows.map((j) => j.tokens.length));
  const keep = Math.max(1, ...rows.map((j) => (j.actionLength > 0 ? j.actionLength + 1 : 1)));
  const attRows = rows.some((j) => j.withAttention) ? Math.max(...rows.map((j) => j.actionLength)) : 0;
  const T = P + S;
  const ids = new BigInt64Array(b * S).fill(BigInt(dims.padTokenId));
  const mask = new BigInt64Array(b * T);
  const pos = new BigInt64Array(b * S);
  rows.forEach((j, r) => {
    const s = j.tokens.length;
    for (let k = 0; k < j.pastLength; k++) mask[r * T + k] = 1n;
    for (let k = 0; k < s; k++) {
      ids[r * S + S - s + k] = BigInt(j.tokens[k]!);
      mask[r * T + P + S - s + k] = 1n;
      pos[r * S + S - s + k] = BigInt(j.pastLength + k);
    }
    stats.computedTokens += s;
    stats.attendedKeys += s * j.pastLength + (s * (s + 1)) / 2;
  });
  stats.logitRows += b * keep;
  const feeds: Record<string, Tensor> = {
    input_ids: session.makeInt64(ids, [b, S]),
    attention_mask: session.makeInt64(mask, [b, T]),
  };
  // Exports without position_ids derive them from the mask's cumsum, which skips the masked gap and padding: the same values.
  if (session.inputNames.includes('position_ids')) feeds['position_ids'] = session.makeInt64(pos, [b, S]);
  if (session.inputNames.includes('num_logits_to_keep')) feeds['num_logits_to_keep'] = session.makeInt64(BigInt64Array.of(BigInt(keep)), []);
  if (session.inputNames.includes('num_attention_rows')) feeds['num_attention_rows'] = session.makeInt64(BigInt64Array.of(BigInt(attRows)), []);
  const { numKeyValueHeads: H, headDim: D } = dims;
  // One row continuing from the whole of its cache (the next chunk of a long row): the cache is the past as is.
  const only = b === 1 ? rows[0]! : undefined;
  const wholeCache = only?.past !== undefined && only.past.length === only.pastLength ? only.past : undefined;
  // Rows whose past is a prefix of a cache, or shares a tensor with other rows, are copied from host arrays.
  const pasts = wholeCache ? [] : await Promise.all(rows.map((j) => j.past?.layers(dims)));
  for (let l = 0; l < dims.numLayers; l++) {
    for (const kv of ['key', 'value'] as const) {
      const name = pastName(l, kv);
      if (wholeCache) {
        feeds[name] = wholeCache.past(session, dims, l, kv);
        continue;
      }
      const data = call.pastBuffers.get(name, b * H * P * D, dims.kvType === 'float16');
      rows.forEach((j, r) => {
        const src = pasts[r]?.[l]![kv];
        const len = j.past?.length ?? 0;
        for (let h = 0; h < H; h++) {
          const at = (r * H + h) * P * D;
          if (src && j.pastLength > 0) data.set(src.subarray(h * len * D, (h * len + j.pastLength) * D), at);
          // The masked gap gets zeros, not a previous pass's values: masked keys weigh exactly 0 either way, but only if finite.
          data.fill(0, at + j.pastLength * D, at + P * D);
        }
      });
      feeds[name] = kvTensor(session, data, [b, H, P, D]);
    }
  }
  const wantKv = rows.some((j) => j.wantKv);
  const fetches = ['logits', ...(wantKv ? presentOutputNames(dims) : [])];
  if (attRows > 0) for (let l = 0; l < dims.numLayers; l++) fetches.push(`attentions.${l}`);
  const out = await session.run(feeds, fetches);
  stats.forwardPasses += 1;
  const logits = out['logits']!;
  const logitData = floatValues(await tensorData(logits), logits.type);
  const [, K, V] = logits.dims as [number, number, number];
  // Presents by the past input they become (a single row's presents are its cache as they are).
  const presentTensors = new Map<string, Tensor>();
  if (wantKv) {
    for (let l = 0; l < dims.numLayers; l++) for (const kv of ['key', 'value'] as const) presentTensors.set(pastName(l, kv), out[`present.${l}.${kv}`]!);
  }
  const batchedCache = wantKv && b > 1 ? KvCache.fromPresents(T, presentTensors) : undefined;
  const presents = batchedCache ? await batchedCache.layers(dims) : [];
  batchedCache?.dispose();
  const res: RowOutput[] = [];
  for (let r = 0; r < b; r++) {
    const j = rows[r]!;
    const o: RowOutput = {};
    if (j.actionLength > 0) {
      const nA = j.actionLength;
      const lp = new Float64Array(nA);
      for (let k = 0; k < nA; k++) lp[k] = logSoftmaxAt(logitData, (r * K + K - 1 - nA + k) * V, V, j.action[k]!);
      o.tokenLogProbs = lp;
    }
    if (j.wantKv && b === 1) {
      // A single row has no gap and no padding: its present tensors are exactly its cache.
      o.kv = KvCache.fromPresents(T, presentTensors);
    } else if (j.wantKv) {
      const s = j.tokens.length;
      const len = j.pastLength + s;
      o.kv = KvCache.fromHost(
        len,
        presents.map((p) => {
          const cut = (src: KvArray): KvArray => {
            const dst = src instanceof Uint16Array ? new Uint16Array(H * len * D) : new Float32Array(H * len * D);
            for (let h = 0; h < H; h++) {
              const base = (r * H + h) * T * D;
              dst.set(src.subarray(base, base + j.pastLength * D), h * len * D);
              dst.set(src.subarray(base + (T - s) * D, base + T * D), (h * len + j.pastLength) * D);
            }
            return dst;
          };
          return { key: cut(p.key), value: cut(p.value) };
        }),
      );
    }
    if (j.withAttention && attRows > 0) o.attention = await sliceAttention(out, dims, r, attRows, T, j);
    res.push(o);
  }
  return res;
}

async function sliceAttention(out: Record<string, Tensor>, dims: ModelDims, r: number, rows: number, T: number, j: RowJob): Promise<ActionAttention> {
  // Rows that ask for attention are computed from their start: in a batch they have no past, and the last chunk
  // of a chunked row runs alone on the whole of its cache, so either way the real columns are the last `len`.
  const n = j.actionLength;
  const len = j.pastLength + j.tokens.length;
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
