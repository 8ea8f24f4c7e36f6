/**
 * Prefix-sharing scoring: the same action log-probs as {@link scoreSequences}, computing each distinct
 * token prefix of the variants (the token trie) once.
 *
 * Causal attention makes the KV cache of a prefix independent of what follows it, so one sequence's
 * presents, cut at any position, are the cache of that prefix. The plan (prefix-plan.ts: partners,
 * rounds, passes, chunks) is pure data; this file runs it, feeding each partner's cache as
 * past_key_values.
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
import { InferenceError } from '../core/errors.js';
import { KvCache, kvTensor, PastBuffers, pastName, type KvArray } from './kv-cache.js';
import type { OrtSession } from './ort-session.js';
import { checkPositiveIntegerOption, defaultBatchBytes, DEFAULT_MAX_CHUNK_TOKENS, passBytes, planChunks, planPasses, planSharing, trieMinimumTokens, type PassBudget, type PassPlan, type RowShape } from './prefix-plan.js';
import { argmaxRow, estimateForwardBytes, floatValues, kvBytesPerToken, logSoftmaxAt, presentOutputNames, sliceAttention, tensorData, type ActionAttention, type ModelDims, type ScoreResult, type ScoreSequence } from './scorer.js';

export { checkPositiveIntegerOption, DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_CHUNK_TOKENS, defaultBatchBytes, minimumBudgetBytes, trieMinimumTokens } from './prefix-plan.js';

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
   * @defaultValue 256: a pass blocks its thread (onnxruntime-node runs on the caller's) for 32-38 ms on the embedded model, and checks were no slower than at 512 (see DEFAULT_MAX_CHUNK_TOKENS)
   */
  maxChunkTokens?: number;
  /**
   * Run every row in a pass of its own: no padding and no masked gap, each row continuing from the whole
   * of a past of its own length (GroupQueryAttention, which cannot represent either and refuses a batch
   * continuing from a past). The prefix sharing is the same. @defaultValue false
   */
  singleRowPasses?: boolean;
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
  /** Logits rows the model returned (rows x num_logits_to_keep, or rows x new tokens without it), for FLOP and memory counts. */
  logitRows: number;
}

/** Results in input order, and what it cost. */
export interface PrefixScoreOutput {
  results: ScoreResult[];
  stats: PrefixScoreStats;
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
  /** Also the greedy token after the row's last one. */
  withNextToken: boolean;
}

interface RowOutput {
  tokenLogProbs?: Float64Array;
  kv?: KvCache;
  attention?: ActionAttention;
  nextToken?: { id: number; logProb: number };
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
  const plan = planSharing(sequences);
  const longest = Math.max(0, ...plan.full.map((s) => s.length));
  const longestAction = Math.max(0, ...sequences.map((s) => s.action.length));
  const n = sequences.length;
  const stats: PrefixScoreStats = {
    computedTokens: 0,
    trieMinimumTokens: trieMinimumTokens(plan.full),
    naiveTokens: plan.full.reduce((a, s) => a + s.length, 0),
    forwardPasses: 0,
    peakEstimatedBytes: 0,
    attendedKeys: 0,
    logitRows: 0,
  };
  const results = new Array<ScoreResult>(n);
  if (n === 0) return { results, stats };

  const { full, order, partner, start, alias, round, dependents, rounds } = plan;
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
    singleRowPasses: options.singleRowPasses === true,
    signal: options.signal,
  };
  try {
    await runRounds();
  } finally {
    for (const c of caches.values()) c.dispose();
  }
  alias.forEach((a, i) => {
    if (a < 0) return;
    const { tokenLogProbs, nextToken } = results[a]!;
    results[i] = { tokenLogProbs: Float64Array.from(tokenLogProbs), ...(sequences[i]!.withNextToken && nextToken ? { nextToken: { ...nextToken } } : {}) };
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
          withNextToken: s.withNextToken === true,
        };
      });
      const outs = await runJobs(call, jobs);
      members.forEach((i, k) => {
        const o = outs[k]!;
        const res: ScoreResult = { tokenLogProbs: o.tokenLogProbs ?? new Float64Array(0) };
        if (o.attention) res.attention = o.attention;
        if (o.nextToken) res.nextToken = o.nextToken;
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
  /** Each row runs alone (PrefixScoreOptions.singleRowPasses). */
  singleRowPasses: boolean;
  signal: AbortSignal | undefined;
}

/** The shape the plan sees of a row job. */
const shapeOf = (j: RowJob): RowShape => ({ pastLength: j.pastLength, newTokens: j.tokens.length, actionLength: j.actionLength });

/** What the plan needs of a call: its budget, chunk size and the bytes held now. */
const budgetOf = (call: Call): PassBudget => ({ dims: call.dims, budget: call.budget, maxChunk: call.maxChunk, heldBytes: call.heldBytes() });

/** Runs row jobs in the passes the plan groups them into (planPasses). */
async function runJobs(call: Call, jobs: readonly RowJob[]): Promise<RowOutput[]> {
  const outs = new Array<RowOutput>(jobs.length);
  const budget = budgetOf(call);
  const planned = planPasses(budget, jobs.map(shapeOf));
  const passes = call.singleRowPasses ? planned.flatMap((p): PassPlan[] => (p.kind === 'batch' ? p.rows.map((row) => ({ kind: 'batch', rows: [row] })) : [p])) : planned;
  for (const pass of passes) {
    if (pass.kind === 'chunked') {
      outs[pass.row] = await runChunked(call, jobs[pass.row]!);
      continue;
    }
    call.signal?.throwIfAborted();
    const rows = pass.rows.map((i) => jobs[i]!);
    call.stats.peakEstimatedBytes = Math.max(call.stats.peakEstimatedBytes, passBytes(budget, rows.map(shapeOf)));
    const res = await forward(call, rows);
    pass.rows.forEach((i, k) => (outs[i] = res[k]!));
  }
  return outs;
}

/** One row in consecutive chunks (planChunks), each continuing the previous chunk's cache; the last chunk holds the action rows. */
async function runChunked(call: Call, job: RowJob): Promise<RowOutput> {
  const budget = budgetOf(call);
  const sizes = planChunks(budget, shapeOf(job));
  let past = job.past;
  let pastLength = job.pastLength;
  let offset = 0;
  const keep = job.actionLength + 1;
  for (const [index, size] of sizes.entries()) {
    call.signal?.throwIfAborted();
    const last = index === sizes.length - 1;
    const row: RowJob = {
      past,
      pastLength,
      tokens: job.tokens.slice(offset, offset + size),
      actionLength: last ? job.actionLength : 0,
      action: last ? job.action : [],
      wantKv: !last || job.wantKv,
      // The last chunk carries the action rows, so it carries their attention rows too (over the whole cache).
      withAttention: last && job.withAttention,
      withNextToken: last && job.withNextToken,
    };
    call.stats.peakEstimatedBytes = Math.max(call.stats.peakEstimatedBytes, estimateForwardBytes(call.dims, 1, pastLength, size, last ? keep : 1) + budget.heldBytes);
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
  throw new InferenceError('a chunked row planned no chunks', { tokens: job.tokens.length });
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
  // What the graph returned: b x keep with num_logits_to_keep, b x S for a model that returns every position's.
  stats.logitRows += b * K;
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
    // Rows end at the last position (left padding), and the last kept logits row is the one after it.
    if (j.withNextToken) o.nextToken = argmaxRow(logitData, (r * K + K - 1) * V, V);
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
        // Rows that ask for attention are computed from their start: in a batch they have no past, and the last chunk
    // of a chunked row runs alone on the whole of its cache, so either way the real columns are the last ones.
    if (j.withAttention && attRows > 0) o.attention = await sliceAttention(out, dims, { row: r, attentionRows: attRows, width: T, actionLength: j.actionLength, length: j.pastLength + j.tokens.length });
    res.push(o);
  }
  return res;
}
