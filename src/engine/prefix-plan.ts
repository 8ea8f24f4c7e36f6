/**
 * The plan of prefix-sharing scoring, as data: which sequence continues which one's cache from which
 * token (rows and prefixes), in which round, how a round's rows group into passes under the byte budget,
 * and how a long row splits into chunks. Pure arithmetic on token ids and sizes; prefix-scorer.ts runs it.
 *
 * The scheduler orders the sequences (the one sharing most with the others first), gives each later
 * sequence the earlier one with which it shares the longest token prefix (its partner), and computes
 * only the tokens after that divergence point. Computed tokens then equal the trie's node count whatever
 * the order. Leave-one-out variants all share most with `full`, so a check is two rounds: `full` once,
 * then every branch batched.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { estimateForwardBytes, kvBytesPerToken, type ModelDims, type ScoreSequence } from './scorer.js';

/** The byte budget of PrefixScoreOptions.maxBatchBytes for sequences that fit a full chunk in it. */
export const DEFAULT_MAX_BATCH_BYTES = 64 * 1024 * 1024;

/**
 * Default of PrefixScoreOptions.maxChunkTokens. onnxruntime-node runs a pass synchronously on the
 * calling thread, so a pass is as long as a host's event loop can be blocked: at 256 the embedded
 * model's longest pass took 32-38 ms against 99-137 ms at 512, and ten checks took no longer (4.9 s
 * against 4.5-5.4 s on onnxruntime-node, 27.9 s either way on wasm, on 2 cores).
 */
export const DEFAULT_MAX_CHUNK_TOKENS = 256;

/** Padded / real new tokens a micro-batch may reach before a row goes to the next one. */
const PADDING_SLACK = 1.25;
/** Smallest non-final chunk of a row split to fit the budget. */
const MIN_CHUNK_TOKENS = 64;

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

/** Which sequence computes what: per sequence (by input index), its tokens, partner, first computed token and round. */
export interface SharingPlan {
  /** Each sequence's tokens, context then action. */
  full: number[][];
  /** The order sequences are planned in: the one sharing most with the others first. */
  order: number[];
  /** The sequence whose cache this one continues, or -1 (computed from its start). */
  partner: number[];
  /** The first token this sequence computes (the length of the prefix taken from its partner's cache). */
  start: number[];
  /** A sequence identical to an earlier one (same tokens and action) reuses its result: that one's index, else -1. */
  alias: number[];
  /** The round a sequence runs in: one after its partner. */
  round: number[];
  /** How many sequences continue from this one's cache (it is kept until the last of them ran). */
  dependents: number[];
  /** Number of rounds. */
  rounds: number;
}

/** Plans which prefixes are shared: partners, starting tokens, aliases and rounds. */
export function planSharing(sequences: readonly ScoreSequence[]): SharingPlan {
  const full = sequences.map((s) => [...s.context, ...s.action]);
  const n = sequences.length;
  const sharing = full.map((s, i) => full.reduce((a, t, j) => (j === i ? a : a + lcp(s, t)), 0));
  const first = sharing.indexOf(Math.max(...sharing));
  const order = n === 0 ? [] : [first, ...full.map((_, i) => i).filter((i) => i !== first)];
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
    if (
      best >= 0 &&
      bestLen === full[i]!.length &&
      full[best]!.length === bestLen &&
      s.action.length === sequences[best]!.action.length &&
      !s.withAttention &&
      (!s.withNextToken || sequences[best]!.withNextToken === true)
    ) {
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
  return { full, order, partner, start, alias, round, dependents, rounds: n === 0 ? 0 : Math.max(...round) + 1 };
}

/** The shape of one row of a pass: new tokens after a past of `pastLength`, the last `actionLength` of them scored. */
export interface RowShape {
  pastLength: number;
  newTokens: number;
  actionLength: number;
}

/** What a round's passes share: the budget, the chunk size and the bytes of the caches held meanwhile. */
export interface PassBudget {
  dims: ModelDims;
  /** Byte budget of a pass plus the held caches. */
  budget: number;
  /** New tokens per row and pass. */
  maxChunk: number;
  /** Bytes of the caches held for later rows (constant during a round). */
  heldBytes: number;
}

/** One pass of a round: rows batched together, or one row too long or too big alone, run in chunks. */
export type PassPlan = { kind: 'batch'; rows: number[] } | { kind: 'chunked'; row: number };

/** Estimated bytes of a pass over these rows plus the held caches. */
export function passBytes(b: PassBudget, rows: readonly RowShape[]): number {
  return (
    estimateForwardBytes(
      b.dims,
      rows.length,
      Math.max(...rows.map((j) => j.pastLength)),
      Math.max(...rows.map((j) => j.newTokens)),
      Math.max(...rows.map((j) => j.actionLength + 1)),
    ) + b.heldBytes
  );
}

/** Groups a round's rows into passes under the budget, shortest first; rows too long or too big alone run in chunks. */
export function planPasses(b: PassBudget, rows: readonly RowShape[]): PassPlan[] {
  const passes: PassPlan[] = [];
  const ord = rows.map((_, i) => i).sort((x, y) => rows[x]!.newTokens - rows[y]!.newTokens);
  let cur: number[] = [];
  const flush = () => {
    if (cur.length > 0) passes.push({ kind: 'batch', rows: cur });
    cur = [];
  };
  for (const i of ord) {
    const row = rows[i]!;
    if ((row.newTokens > b.maxChunk || passBytes(b, [row]) > b.budget) && row.newTokens > row.actionLength + 1) {
      flush();
      passes.push({ kind: 'chunked', row: i });
      continue;
    }
    if (cur.length > 0) {
      const batch = [...cur.map((k) => rows[k]!), row];
      // Rows are padded to the longest: past a PADDING_SLACK of wasted positions, separate passes are cheaper.
      const padded = batch.length * row.newTokens;
      const real = batch.reduce((a, j) => a + j.newTokens, 0);
      // A pass blocks its thread for as long as it computes (onnxruntime-node runs on the caller's): at most a chunk's worth of tokens.
      if (passBytes(b, batch) > b.budget || padded > PADDING_SLACK * real || padded > b.maxChunk) flush();
    }
    cur.push(i);
  }
  flush();
  return passes;
}

/** The chunk sizes of one long row, in order: each the largest that fits the budget, the last carrying every action row. */
export function planChunks(b: PassBudget, row: RowShape): number[] {
  const sizes: number[] = [];
  const keep = row.actionLength + 1;
  let pastLength = row.pastLength;
  let offset = 0;
  while (offset < row.newTokens) {
    const remaining = row.newTokens - offset;
    let size = remaining;
    const fits = (s: number, k: number) => estimateForwardBytes(b.dims, 1, pastLength, s, k) + b.heldBytes <= b.budget;
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
    if (size > b.maxChunk && remaining > keep) size = Math.max(1, Math.min(b.maxChunk, remaining - keep));
    sizes.push(size);
    pastLength += size;
    offset += size;
  }
  return sizes;
}
