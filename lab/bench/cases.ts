/**
 * The benchmark's browser-safe part: the generated cases, the three scoring paths (prefix-sharing,
 * naive leave-one-out, the transformers.js-style full-logits forward) and one case's measurement.
 * `run.ts` drives it on Node backends; `browser/page.ts` runs the same code in Chromium through
 * Playwright. Nothing here imports Node modules.
 */
import { encodeActionCall, encodeBos, encodeMessage, encodeToolDef } from '../../src/engine/chat-format.js';
import type { OrtSession } from '../../src/engine/ort-session.js';
import { scoreSequencesShared, type PrefixScoreStats } from '../../src/engine/prefix-scorer.js';
import { scoreSequences, type ModelDims, type ScoreSequence } from '../../src/engine/scorer.js';
import { trieMinimumTokens } from '../../src/engine/prefix-plan.js';
import type { ProxyTokenizer } from '../../src/engine/tokenizer.js';
import { buildVariants } from '../../src/core/variants.js';
import { generateCase } from '../../src/scenarios/index.js';
import type { Message } from '../../src/scenarios/index.js';
import { startStallMeter } from './stall.js';

/** Share of a case's tokens in system prompt + tool descriptions (the standard case: ~1,000 of ~2k). */
const PREFIX_SHARE = 0.5;
const USER_TOKENS = 50;

/** A generated case's token sequences (one per leave-one-out variant), as a harness hands them to a page. */
export interface BenchCase {
  /** Every variant a check scores: full, no-user, one per span, then the groups of spans (all of them: one tool's results). */
  sequences: ScoreSequence[];
  /** How many of `sequences`, from the start, the seeds' per-span check scores (full, no-user, one per span). */
  perSpanVariants: number;
  contextTokens: number;
}

export interface CaseSpec {
  tokens: number;
  spans: number;
}

/** What one case measured on one backend. */
export interface CaseResult {
  backend: string;
  tokens: number;
  spans: number;
  /** Variants one check scores (groups of spans included). */
  variants: number;
  /** Of those, the seeds' per-span check's: full, no-user, one per span. */
  per_span_variants: number;
  /** The trie's token count with the groups against the per-span check's: what the group variants cost. */
  group_cost_ratio: number;
  context_tokens: number;
  computed_tokens: number;
  naive_tokens: number;
  trie_minimum_tokens: number;
  forward_passes: number;
  p50_ms: { prefix: number; naive: number; transformersjs: number };
  p95_ms: { prefix: number; naive: number; transformersjs: number };
  /** The slowest timed run of each path (a check's worst answer time, against the guard's timeoutMs, 30 s by default). */
  max_ms: { prefix: number; naive: number; transformersjs: number };
  /** The longest event-loop stall during any timed run of each path (longestStall). */
  longest_stall_ms: { prefix: number; naive: number; transformersjs: number };
  /** Peak memory above the level before each path; null where the harness cannot measure it (browsers). */
  rss_delta_mib: { prefix: number; naive: number; transformersjs: number } | null;
  estimated_peak_mib_prefix: number;
  gflop_check: number;
  gflops_achieved: number;
  matmul_peak_gflops: number;
  max_abs_logprob_diff_vs_naive: number;
  computed_tokens_ratio_vs_naive: number;
  trie_minimum_ratio: number;
  p50_speedup_vs_naive: number;
  p50_speedup_vs_transformersjs: number;
  peak_memory_ratio_vs_transformersjs: number | null;
  matmul_peak_fraction: number;
}

const full = (s: ScoreSequence): number[] => [...s.context, ...s.action];

/** Takes ids from an endless stream of generator text until `n` are collected. */
function textIds(tok: ProxyTokenizer, n: number, seed: number, pick: (m: Message) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; out.length < n; i++) {
    for (const m of generateCase('test', seed, i).messages) if (pick(m)) out.push(...tok.encodeText(m.content + '\n'));
  }
  return out.slice(0, n);
}

/**
 * A guard case of ~`tokens` tokens: bos + tools + system prompt (PREFIX_SHARE), a user request, then per
 * span an assistant call and a tool result (generator text extended to length), then the action.
 */
export function buildCase(tok: ProxyTokenizer, spec: CaseSpec): BenchCase {
  const g = generateCase('test', 1000 + spec.tokens + spec.spans, 0);
  const end = tok.controlId('<|end|>');
  const bos = encodeBos(tok);
  const tools = g.tools.map((t) => encodeToolDef(tok, t)).flat();
  const systemHead = encodeMessage(tok, { role: 'system', content: '' }).slice(0, -1);
  const prefixTarget = Math.round(spec.tokens * PREFIX_SHARE) - bos.length - tools.length;
  const system = [...systemHead, ...textIds(tok, Math.max(16, prefixTarget - systemHead.length - 1), 7, (m) => m.role === 'system' || m.role === 'tool'), end];
  const userHead = encodeMessage(tok, { role: 'user', content: '' }).slice(0, -1);
  const user = [...userHead, ...textIds(tok, USER_TOKENS, 8, (m) => m.role === 'user'), end];
  const action = encodeActionCall(tok, g.action.name, g.action.arguments);
  const fixed = bos.length + tools.length + system.length + user.length + action.prefix.length + action.ids.length;
  const call = encodeMessage(tok, { role: 'assistant', content: '', tool_calls: [{ name: g.action.name, arguments: {} }] });
  const perSpan = Math.max(24, Math.floor((spec.tokens - fixed) / spec.spans) - call.length);
  const toolHead = encodeMessage(tok, { role: 'tool', content: '', tool_name: g.action.name }).slice(0, -1);
  const messages: number[][] = [system, user];
  const spans: Array<{ id: number; messageIndex: number; toolName: string }> = [];
  for (let s = 0; s < spec.spans; s++) {
    messages.push(call);
    spans.push({ id: s, messageIndex: messages.length, toolName: g.action.name });
    messages.push([...toolHead, ...textIds(tok, perSpan - toolHead.length - 1, 20 + s, (m) => m.role === 'tool'), end]);
  }
  // Distinct texts: no near-duplicates, so the one group is every span (one tool's results, all untrusted).
  const variants = buildVariants({ messages: messages.map((_, i) => ({ content: `message ${i}` })), userIndices: [1], spans, tools: [] } as never, { groups: true });
  const sequences = variants.map((v) => ({ context: [...bos, ...tools, ...v.keep.flatMap((i) => messages[i]!), ...action.prefix], action: action.ids }));
  return { sequences, perSpanVariants: spec.spans + 2, contextTokens: sequences[0]!.context.length + action.ids.length };
}

/** Synthetic ids with the same layout when no tokenizer is around (CI without the dev model). */
export function syntheticCase(dims: ModelDims, spec: CaseSpec): BenchCase {
  let s = spec.tokens * 31 + spec.spans;
  const r = (n: number) => Array.from({ length: n }, () => 16 + ((s = (s * 1103515245 + 12345) >>> 0) % (dims.vocabSize - 16)));
  const prefix = [0, ...r(Math.round(spec.tokens * PREFIX_SHARE))];
  const user = [7, ...r(USER_TOKENS)];
  const action = r(12);
  const per = Math.floor((spec.tokens - prefix.length - user.length - 14) / spec.spans);
  const spans = Array.from({ length: spec.spans }, () => [9, 10, ...r(per - 2)]);
  const msgs = [user, ...spans];
  const variants = [msgs, msgs.slice(1), ...spans.map((_, i) => msgs.filter((_, k) => k !== i + 1)), ...(spans.length > 1 ? [[user]] : [])];
  const sequences = variants.map((m) => ({ context: [...prefix, ...m.flat(), 8, 11], action }));
  return { sequences, perSpanVariants: spans.length + 2, contextTokens: sequences[0]!.context.length + action.length };
}

/** The transformers.js path: one causal-LM forward per variant returning every position's logits, log-softmax over all of them. */
export async function transformersJsStyle(session: OrtSession, dims: ModelDims, seqs: readonly ScoreSequence[]): Promise<Float64Array[]> {
  const res: Float64Array[] = [];
  for (const s of seqs) {
    const full = [...s.context, ...s.action];
    const T = full.length;
    const feeds: Record<string, ReturnType<OrtSession['makeInt64']>> = {
      input_ids: session.makeInt64(BigInt64Array.from(full.map(BigInt)), [1, T]),
      attention_mask: session.makeInt64(new BigInt64Array(T).fill(1n), [1, T]),
      position_ids: session.makeInt64(BigInt64Array.from(full.map((_, i) => BigInt(i))), [1, T]),
      num_logits_to_keep: session.makeInt64(BigInt64Array.of(0n), []),
      num_attention_rows: session.makeInt64(BigInt64Array.of(0n), []),
    };
    for (let l = 0; l < dims.numLayers; l++) {
      for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = session.makeFloat32(new Float32Array(0), [1, dims.numKeyValueHeads, 0, dims.headDim]);
    }
    const out = await session.run(feeds);
    const logits = out['logits']!.data as Float32Array;
    const V = dims.vocabSize;
    // transformers.js's log_softmax materialises a second [T, V] tensor for every position.
    const logp = new Float32Array(logits.length);
    for (let t = 0; t < T; t++) {
      let max = -Infinity;
      for (let v = 0; v < V; v++) max = Math.max(max, logits[t * V + v]!);
      let sum = 0;
      for (let v = 0; v < V; v++) sum += Math.exp(logits[t * V + v]! - max);
      const lse = max + Math.log(sum);
      for (let v = 0; v < V; v++) logp[t * V + v] = logits[t * V + v]! - lse;
    }
    const n = s.action.length;
    res.push(Float64Array.from(s.action, (id, j) => logp[(T - 1 - n + j) * V + id]!));
  }
  return res;
}

export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

export async function timed(reps: number, fn: () => Promise<unknown>): Promise<number[]> {
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    ts.push(performance.now() - t0);
  }
  return ts;
}

/**
 * Times several functions `reps` times each, interleaved (a round runs each once, the order rotating by
 * round), so that drift in the machine's speed (other processes, clocks, caches) falls on all of them alike
 * and their ratio stays stable; timing one after the other let a slow minute land on one path only. The
 * first `warmup` rounds run untimed: here the first rounds after a session's first run are still ~20%
 * slower (JIT, onnxruntime's per-shape plans), on every path.
 */
export async function timedInterleaved<K extends string>(
  reps: number,
  fns: Record<K, () => Promise<unknown>>,
  warmup = 0,
  stalls?: Partial<Record<K, number>>,
): Promise<Record<K, number[]>> {
  const keys = Object.keys(fns) as K[];
  const out = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < warmup + reps; round++) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[(round + i) % keys.length]!;
      const t0 = performance.now();
      const stall = await longestStall(fns[k]);
      if (round >= warmup) {
        out[k].push(performance.now() - t0);
        if (stalls) stalls[k] = Math.max(stalls[k] ?? 0, stall);
      }
    }
  }
  return out;
}

/**
 * Runs `fn` and returns the longest event-loop stall meanwhile (startStallMeter). A synchronous inference
 * run counts whole; a path that awaits between passes lets the loop run there.
 */
export async function longestStall(fn: () => Promise<unknown>): Promise<number> {
  const meter = startStallMeter();
  try {
    await fn();
  } catch (error) {
    meter.stop();
    throw error;
  }
  return meter.stop();
}

/**
 * The backend's matmul throughput (GFLOP/s) on the model's own MLP shape [m, d] x [d, ffn], on a session
 * `open` creates of lab/bench/bench-model.ts's matmul.onnx (released afterwards).
 */
export async function matmulPeakGflops(open: () => Promise<OrtSession>, dims: ModelDims, m: number): Promise<number> {
  const session = await open();
  try {
    const d = dims.hiddenSize!;
    const f = dims.intermediateSize!;
    const x = session.makeFloat32(new Float32Array(m * d).map((_, i) => ((i % 13) - 6) / 13), [m, d]);
    await session.run({ x });
    const ts = await timed(10, () => session.run({ x }));
    return (2 * m * d * f) / (Math.min(...ts) / 1000) / 1e9;
  } finally {
    await session.release();
  }
}

/** FLOPs as the issue counts them: 2 x non-embedding params x tokens + 4 x layers x d x keys per token + lm_head rows. */
function checkFlops(dims: ModelDims, st: PrefixScoreStats): number {
  const d = dims.hiddenSize!;
  const q = dims.numHeads * dims.headDim;
  const kv = dims.numKeyValueHeads * dims.headDim;
  const perLayer = d * q + 2 * d * kv + q * d + 3 * d * dims.intermediateSize!;
  return 2 * dims.numLayers * perLayer * st.computedTokens + 4 * dims.numLayers * q * st.attendedKeys + 2 * d * dims.vocabSize * st.logitRows;
}

/** The three scoring paths a case compares. */
export const PATHS = {
  prefix: (s: OrtSession, dims: ModelDims, seqs: ScoreSequence[]) => scoreSequencesShared(s, dims, seqs),
  naive: (s: OrtSession, dims: ModelDims, seqs: ScoreSequence[]) => scoreSequences(s, dims, seqs, { maxBatchTokens: 1 }),
  transformersjs: (s: OrtSession, dims: ModelDims, seqs: ScoreSequence[]) => transformersJsStyle(s, dims, seqs),
} as const;
export type PathName = keyof typeof PATHS;

/** Rounds to 3 decimals, as every results file does. */
export const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** A case's memory columns from each path's peak memory in MiB (null: not measured). */
export function memoryFields(mem: Record<PathName, number> | null): Pick<CaseResult, 'rss_delta_mib' | 'peak_memory_ratio_vs_transformersjs'> {
  if (mem === null) return { rss_delta_mib: null, peak_memory_ratio_vs_transformersjs: null };
  return {
    rss_delta_mib: { prefix: r3(mem.prefix), naive: r3(mem.naive), transformersjs: r3(mem.transformersjs) },
    peak_memory_ratio_vs_transformersjs: r3(mem.transformersjs / Math.max(mem.prefix, 1)),
  };
}

/** A backend a harness hands in: Node sessions (run.ts) or a page's onnxruntime-web (browser/page.ts). */
export interface BenchSession {
  name: string;
  create(): Promise<OrtSession>;
  matmulPeakGflops(m: number): Promise<number>;
  /** Peak memory (MiB) above the level before `fn`; absent where it cannot be measured (a page cannot see its process). */
  memoryDelta?(fn: () => Promise<unknown>): Promise<number>;
  /**
   * Peak memory (MiB) of one path's first run on the case in a fresh process, where the harness can start
   * one; preferred over `memoryDelta`, since paths sharing a process reuse each other's freed memory.
   */
  pathMemory?(path: PathName, spec: CaseSpec): Promise<number>;
}

/** Benchmarks one case on one backend: the three paths, their agreement, and the ratios. */
export async function benchCase(bs: BenchSession, dims: ModelDims, spec: CaseSpec, { sequences, contextTokens, perSpanVariants }: BenchCase, reps: number): Promise<CaseResult> {
  const [ours, naive, tjs] = [await bs.create(), await bs.create(), await bs.create()];
  // The first run of each path is measured for RSS (it also warms the session) and checked for agreement.
  let shared!: Awaited<ReturnType<typeof scoreSequencesShared>>;
  let ref!: Awaited<ReturnType<typeof scoreSequences>>;
  let tj!: Float64Array[];
  // Measured here only where the harness cannot measure each path in a fresh process (pathMemory, below).
  const inProcess = bs.pathMemory ? undefined : bs.memoryDelta?.bind(bs);
  const measure = inProcess ?? (async (fn: () => Promise<unknown>) => (await fn(), Number.NaN));
  const mem = {
    prefix: await measure(async () => (shared = await PATHS.prefix(ours, dims, sequences))),
    naive: await measure(async () => (ref = await PATHS.naive(naive, dims, sequences))),
    transformersjs: await measure(async () => (tj = await PATHS.transformersjs(tjs, dims, sequences))),
  };
  if (bs.pathMemory) for (const path of ['prefix', 'naive', 'transformersjs'] as const) mem[path] = await bs.pathMemory(path, spec);
  let diff = 0;
  sequences.forEach((_, i) =>
    shared.results[i]!.tokenLogProbs.forEach((v, k) => (diff = Math.max(diff, Math.abs(v - ref[i]!.tokenLogProbs[k]!), Math.abs(v - tj[i]![k]!)))),
  );
  // The peak is the best seen of two measurements, before and after the timing, so a slow minute on this shared
  // machine cannot put it below what the check itself reached.
  const peakBefore = await bs.matmulPeakGflops(Math.min(2048, contextTokens));
  const stall: Partial<Record<PathName, number>> = {};
  const { prefix: tPrefix, naive: tNaive, transformersjs: tTjs } = await timedInterleaved(reps, {
    prefix: () => PATHS.prefix(ours, dims, sequences),
    naive: () => PATHS.naive(naive, dims, sequences),
    transformersjs: () => PATHS.transformersjs(tjs, dims, sequences),
  }, 1, stall);
  await Promise.all([ours.release(), naive.release(), tjs.release()]);
  const peak = Math.max(peakBefore, await bs.matmulPeakGflops(Math.min(2048, contextTokens)));
  const st = shared.stats;
  const flops = checkFlops(dims, st);
  const p50 = { prefix: quantile(tPrefix, 0.5), naive: quantile(tNaive, 0.5), transformersjs: quantile(tTjs, 0.5) };
  const achieved = flops / (p50.prefix / 1000) / 1e9;
  return {
    backend: bs.name,
    tokens: spec.tokens,
    spans: spec.spans,
    variants: sequences.length,
    per_span_variants: perSpanVariants,
    group_cost_ratio: r3(trieMinimumTokens(sequences.map(full)) / trieMinimumTokens(sequences.slice(0, perSpanVariants).map(full))),
    context_tokens: contextTokens,
    computed_tokens: st.computedTokens,
    naive_tokens: st.naiveTokens,
    trie_minimum_tokens: st.trieMinimumTokens,
    forward_passes: st.forwardPasses,
    p50_ms: { prefix: r3(p50.prefix), naive: r3(p50.naive), transformersjs: r3(p50.transformersjs) },
    p95_ms: { prefix: r3(quantile(tPrefix, 0.95)), naive: r3(quantile(tNaive, 0.95)), transformersjs: r3(quantile(tTjs, 0.95)) },
    max_ms: { prefix: r3(Math.max(...tPrefix)), naive: r3(Math.max(...tNaive)), transformersjs: r3(Math.max(...tTjs)) },
    longest_stall_ms: { prefix: r3(stall.prefix ?? 0), naive: r3(stall.naive ?? 0), transformersjs: r3(stall.transformersjs ?? 0) },
    ...memoryFields(bs.memoryDelta !== undefined || bs.pathMemory !== undefined ? mem : null),
    estimated_peak_mib_prefix: r3(st.peakEstimatedBytes / 2 ** 20),
    gflop_check: r3(flops / 1e9),
    gflops_achieved: r3(achieved),
    matmul_peak_gflops: r3(peak),
    max_abs_logprob_diff_vs_naive: diff,
    computed_tokens_ratio_vs_naive: r3(st.computedTokens / st.naiveTokens),
    trie_minimum_ratio: r3(st.computedTokens / st.trieMinimumTokens),
    p50_speedup_vs_naive: r3(p50.naive / p50.prefix),
    p50_speedup_vs_transformersjs: r3(p50.transformersjs / p50.prefix),
    matmul_peak_fraction: r3(achieved / peak),
  };
}
