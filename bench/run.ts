/**
 * `npm run bench`: prefix-sharing leave-one-out vs naive leave-one-out vs the transformers.js-style path,
 * and vs the backend's own matmul peak, on generated guard cases of ~512 / 2k / 4k tokens with 1 / 3 / 8 spans.
 *
 * Each backend runs in its own child process (onnxruntime-web's wasm thread count is fixed per process, and
 * RSS deltas are cleaner). Flags: --quick (onnxruntime-node, the 2k-token / 3-span case only), --json (the
 * LAST stdout line is the 2k / 3-span onnxruntime-node summary), --backends node,wasm1,wasm2.
 *
 * Browser backends (wasm / WebGPU through Playwright) are another harness's job: it can import
 * `benchCase` from this file into a page and pass a session created there (see BenchSession).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { callJson, encodeActionCall, encodeBos, encodeMessage, encodeToolDef } from '../src/engine/chat-format.js';
import { dimsFromConfig } from '../src/engine/engine.js';
import { createOrtSession, type Backend, type OrtSession } from '../src/engine/ort-session.js';
import { scoreSequencesShared, type PrefixScoreStats } from '../src/engine/prefix-scorer.js';
import { scoreSequences, type ModelDims, type ScoreSequence } from '../src/engine/scorer.js';
import { createProxyTokenizer, type ProxyTokenizer } from '../src/engine/tokenizer.js';
import { buildVariants } from '../src/core/variants.js';
import { generateCase } from '../src/scenarios/index.js';
import type { Message } from '../src/scenarios/index.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MODEL_DIR = `${ROOT}.bench-model/`;
const SIZES = [512, 2048, 4096] as const;
const SPANS = [1, 3, 8] as const;
const BACKENDS = { node: { backend: 'node', threads: undefined }, wasm1: { backend: 'wasm', threads: 1 }, wasm2: { backend: 'wasm', threads: 2 } } as const;
type BackendName = keyof typeof BACKENDS;
/** Share of a case's tokens in system prompt + tool descriptions (the standard case: ~1,000 of ~2k). */
const PREFIX_SHARE = 0.5;
const USER_TOKENS = 50;
const RSS_SAMPLE_MS = 1;

interface CaseSpec {
  tokens: number;
  spans: number;
}

/** What one case measured on one backend. */
interface CaseResult {
  backend: string;
  tokens: number;
  spans: number;
  variants: number;
  context_tokens: number;
  computed_tokens: number;
  naive_tokens: number;
  trie_minimum_tokens: number;
  forward_passes: number;
  p50_ms: { prefix: number; naive: number; transformersjs: number };
  p95_ms: { prefix: number; naive: number; transformersjs: number };
  rss_delta_mib: { prefix: number; naive: number; transformersjs: number };
  estimated_peak_mib_prefix: number;
  gflop_check: number;
  gflops_achieved: number;
  matmul_peak_gflops: number;
  max_abs_logprob_diff_vs_naive: number;
  computed_tokens_ratio_vs_naive: number;
  trie_minimum_ratio: number;
  p50_speedup_vs_naive: number;
  p50_speedup_vs_transformersjs: number;
  peak_memory_ratio_vs_transformersjs: number;
  matmul_peak_fraction: number;
}

function loadTokenizer(): ProxyTokenizer | undefined {
  for (const dir of [`${ROOT}public/models/edgearmor-proxy/`, `${ROOT}.dev-model/`]) {
    if (existsSync(`${dir}tokenizer.json`)) {
      return createProxyTokenizer({
        tokenizerJson: JSON.parse(readFileSync(`${dir}tokenizer.json`, 'utf8')),
        tokenizerConfig: JSON.parse(readFileSync(`${dir}tokenizer_config.json`, 'utf8')),
      });
    }
  }
  return undefined;
}

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
function buildCase(tok: ProxyTokenizer, spec: CaseSpec): { sequences: ScoreSequence[]; contextTokens: number } {
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
  const spans: Array<{ id: number; messageIndex: number }> = [];
  for (let s = 0; s < spec.spans; s++) {
    messages.push(call);
    spans.push({ id: s, messageIndex: messages.length });
    messages.push([...toolHead, ...textIds(tok, perSpan - toolHead.length - 1, 20 + s, (m) => m.role === 'tool'), end]);
  }
  const variants = buildVariants({ messages: messages.map(() => ({})), userIndices: [1], spans, tools: [] } as never);
  const sequences = variants.map((v) => ({ context: [...bos, ...tools, ...v.keep.flatMap((i) => messages[i]!), ...action.prefix], action: action.ids }));
  return { sequences, contextTokens: sequences[0]!.context.length + action.ids.length };
}

/** Synthetic ids with the same layout when no tokenizer is around (CI without the dev model). */
function syntheticCase(dims: ModelDims, spec: CaseSpec): { sequences: ScoreSequence[]; contextTokens: number } {
  let s = spec.tokens * 31 + spec.spans;
  const r = (n: number) => Array.from({ length: n }, () => 16 + ((s = (s * 1103515245 + 12345) >>> 0) % (dims.vocabSize - 16)));
  const prefix = [0, ...r(Math.round(spec.tokens * PREFIX_SHARE))];
  const user = [7, ...r(USER_TOKENS)];
  const action = r(12);
  const per = Math.floor((spec.tokens - prefix.length - user.length - 14) / spec.spans);
  const spans = Array.from({ length: spec.spans }, () => [9, 10, ...r(per - 2)]);
  const msgs = [user, ...spans];
  const variants = [msgs, msgs.slice(1), ...spans.map((_, i) => msgs.filter((_, k) => k !== i + 1))];
  const sequences = variants.map((m) => ({ context: [...prefix, ...m.flat(), 8, 11], action }));
  return { sequences, contextTokens: sequences[0]!.context.length + action.length };
}

/** The transformers.js path: one causal-LM forward per variant returning every position's logits, log-softmax over all of them. */
async function transformersJsStyle(session: OrtSession, dims: ModelDims, seqs: readonly ScoreSequence[]): Promise<Float64Array[]> {
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

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function timed(reps: number, fn: () => Promise<unknown>): Promise<number[]> {
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn();
    ts.push(performance.now() - t0);
  }
  return ts;
}

/** Peak RSS above the level before `fn`, sampled every RSS_SAMPLE_MS while onnxruntime runs off the main thread. */
async function rssDelta(fn: () => Promise<unknown>): Promise<number> {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  await fn();
  peak = Math.max(peak, process.memoryUsage.rss());
  clearInterval(timer);
  return (peak - base) / 2 ** 20;
}

/** Measures the backend's matmul throughput with the model's own MLP shape [m, d] x [d, ffn]. */
async function matmulPeak(backend: Backend, threads: number | undefined, dims: ModelDims, m: number): Promise<number> {
  const s = await createOrtSession(readFileSync(`${MODEL_DIR}onnx/matmul.onnx`), { backend, ...(threads ? { wasmThreads: threads } : {}) });
  const d = dims.hiddenSize!;
  const f = dims.intermediateSize!;
  const x = s.makeFloat32(new Float32Array(m * d).map((_, i) => ((i % 13) - 6) / 13), [m, d]);
  await s.run({ x });
  const ts = await timed(10, () => s.run({ x }));
  await s.release();
  return (2 * m * d * f) / (Math.min(...ts) / 1000) / 1e9;
}

/** FLOPs as the issue counts them: 2 x non-embedding params x tokens + 4 x layers x d x keys per token + lm_head rows. */
function checkFlops(dims: ModelDims, st: PrefixScoreStats): number {
  const d = dims.hiddenSize!;
  const q = dims.numHeads * dims.headDim;
  const kv = dims.numKeyValueHeads * dims.headDim;
  const perLayer = d * q + 2 * d * kv + q * d + 3 * d * dims.intermediateSize!;
  return 2 * dims.numLayers * perLayer * st.computedTokens + 4 * dims.numLayers * q * st.attendedKeys + 2 * d * dims.vocabSize * st.logitRows;
}

/** A session a harness hands in (Node here; a browser page in the Playwright harness). */
export interface BenchSession {
  name: string;
  create(): Promise<OrtSession>;
  matmulPeakGflops(m: number): Promise<number>;
}

/** Benchmarks one case on one backend: the three paths, their agreement, and the ratios. */
export async function benchCase(bs: BenchSession, dims: ModelDims, spec: CaseSpec, sequences: ScoreSequence[], contextTokens: number, reps: number): Promise<CaseResult> {
  const [ours, naive, tjs] = [await bs.create(), await bs.create(), await bs.create()];
  // The first run of each path is measured for RSS (it also warms the session) and checked for agreement.
  let shared!: Awaited<ReturnType<typeof scoreSequencesShared>>;
  let ref!: Awaited<ReturnType<typeof scoreSequences>>;
  let tj!: Float64Array[];
  const mem = {
    prefix: await rssDelta(async () => (shared = await scoreSequencesShared(ours, dims, sequences))),
    naive: await rssDelta(async () => (ref = await scoreSequences(naive, dims, sequences, { maxBatchTokens: 1 }))),
    transformersjs: await rssDelta(async () => (tj = await transformersJsStyle(tjs, dims, sequences))),
  };
  let diff = 0;
  sequences.forEach((_, i) =>
    shared.results[i]!.tokenLogProbs.forEach((v, k) => (diff = Math.max(diff, Math.abs(v - ref[i]!.tokenLogProbs[k]!), Math.abs(v - tj[i]![k]!)))),
  );
  const tPrefix = await timed(reps, () => scoreSequencesShared(ours, dims, sequences));
  const tNaive = await timed(reps, () => scoreSequences(naive, dims, sequences, { maxBatchTokens: 1 }));
  const tTjs = await timed(reps, () => transformersJsStyle(tjs, dims, sequences));
  await Promise.all([ours.release(), naive.release(), tjs.release()]);
  const peak = await bs.matmulPeakGflops(Math.min(2048, contextTokens));
  const st = shared.stats;
  const flops = checkFlops(dims, st);
  const p50 = { prefix: quantile(tPrefix, 0.5), naive: quantile(tNaive, 0.5), transformersjs: quantile(tTjs, 0.5) };
  const achieved = flops / (p50.prefix / 1000) / 1e9;
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    backend: bs.name,
    tokens: spec.tokens,
    spans: spec.spans,
    variants: sequences.length,
    context_tokens: contextTokens,
    computed_tokens: st.computedTokens,
    naive_tokens: st.naiveTokens,
    trie_minimum_tokens: st.trieMinimumTokens,
    forward_passes: st.forwardPasses,
    p50_ms: { prefix: r3(p50.prefix), naive: r3(p50.naive), transformersjs: r3(p50.transformersjs) },
    p95_ms: { prefix: r3(quantile(tPrefix, 0.95)), naive: r3(quantile(tNaive, 0.95)), transformersjs: r3(quantile(tTjs, 0.95)) },
    rss_delta_mib: { prefix: r3(mem.prefix), naive: r3(mem.naive), transformersjs: r3(mem.transformersjs) },
    estimated_peak_mib_prefix: r3(st.peakEstimatedBytes / 2 ** 20),
    gflop_check: r3(flops / 1e9),
    gflops_achieved: r3(achieved),
    matmul_peak_gflops: r3(peak),
    max_abs_logprob_diff_vs_naive: diff,
    computed_tokens_ratio_vs_naive: r3(st.computedTokens / st.naiveTokens),
    trie_minimum_ratio: r3(st.computedTokens / st.trieMinimumTokens),
    p50_speedup_vs_naive: r3(p50.naive / p50.prefix),
    p50_speedup_vs_transformersjs: r3(p50.transformersjs / p50.prefix),
    peak_memory_ratio_vs_transformersjs: r3(mem.transformersjs / Math.max(mem.prefix, 1)),
    matmul_peak_fraction: r3(achieved / peak),
  };
}

async function child(name: BackendName, quick: boolean): Promise<void> {
  const cfg = JSON.parse(readFileSync(`${MODEL_DIR}config.json`, 'utf8')) as Record<string, number>;
  const dims: ModelDims = dimsFromConfig(cfg, cfg['pad_token_id']!);
  const tok = loadTokenizer();
  const { backend, threads }: { backend: Backend; threads: number | undefined } = BACKENDS[name];
  const model = readFileSync(`${MODEL_DIR}onnx/model.onnx`);
  const bs: BenchSession = {
    name: name === 'node' ? 'onnxruntime-node' : `onnxruntime-web wasm ${threads} thread(s)`,
    create: () => createOrtSession(model, { backend, ...(threads ? { wasmThreads: threads } : {}) }),
    matmulPeakGflops: (m) => matmulPeak(backend, threads, dims, m),
  };
  // wasm is ~4x slower than onnxruntime-node: its full run covers 512 tokens and the 2k / 3-span standard case.
  const all = SIZES.flatMap((tokens) => SPANS.map((spans) => ({ tokens, spans })));
  const casesArg = process.argv.indexOf('--cases');
  const picked = casesArg >= 0 ? process.argv[casesArg + 1]!.split(',').map((c) => c.split('x').map(Number) as [number, number]) : undefined;
  const specs: CaseSpec[] = picked
    ? picked.map(([tokens, spans]) => ({ tokens, spans }))
    : quick
    ? [{ tokens: 2048, spans: 3 }]
    : backend === 'node'
      ? all
      : all.filter((c) => c.tokens === 512 || (c.tokens === 2048 && c.spans === 3));
  const out: CaseResult[] = [];
  for (const spec of specs) {
    const c = tok ? buildCase(tok, spec) : syntheticCase(dims, spec);
    const repsArg = process.argv.indexOf('--reps');
    const reps = repsArg >= 0 ? Number(process.argv[repsArg + 1]) : quick ? 5 : spec.tokens >= 4096 ? 3 : spec.tokens >= 2048 ? 5 : 7;
    const r = await benchCase(bs, dims, spec, c.sequences, c.contextTokens, backend === 'wasm' && spec.tokens >= 2048 ? Math.min(2, reps) : reps);
    process.stderr.write(`${bs.name} ${spec.tokens}/${spec.spans}: ${JSON.stringify(r)}\n`);
    out.push(r);
  }
  process.stdout.write(`${JSON.stringify({ tokenizer: tok ? 'proxy tokenizer on generator text' : 'synthetic ids', results: out })}\n`);
}


function machine(): string {
  const cpu = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown CPU';
  const mem = Math.round(Number(readFileSync('/proc/meminfo', 'utf8').match(/MemTotal:\s*(\d+)/)?.[1] ?? 0) / 2 ** 20);
  const cores = Number(execFileSync('nproc').toString().trim());
  return `${cpu}, ${cores} cores, ${mem} GiB RAM, no GPU, Node ${process.version}`;
}

function table(rows: CaseResult[]): string {
  const head = '| backend | ctx tokens | spans | computed / naive tok | / trie min | p50 ms ours / naive / tjs | p95 ms ours | speedup vs naive | vs tjs | RSS Δ MiB ours / tjs | mem ratio tjs/ours | GFLOP/s / matmul peak | fraction |';
  const sep = '|' + '---|'.repeat(13);
  const lines = rows.map((r) =>
    `| ${r.backend} | ${r.context_tokens} | ${r.spans} | ${r.computed_tokens} / ${r.naive_tokens} (${r.computed_tokens_ratio_vs_naive}) | ${r.trie_minimum_ratio} | ${r.p50_ms.prefix.toFixed(0)} / ${r.p50_ms.naive.toFixed(0)} / ${r.p50_ms.transformersjs.toFixed(0)} | ${r.p95_ms.prefix.toFixed(0)} | ${r.p50_speedup_vs_naive} | ${r.p50_speedup_vs_transformersjs} | ${r.rss_delta_mib.prefix.toFixed(0)} / ${r.rss_delta_mib.transformersjs.toFixed(0)} | ${r.peak_memory_ratio_vs_transformersjs} | ${r.gflops_achieved.toFixed(1)} / ${r.matmul_peak_gflops.toFixed(1)} | ${r.matmul_peak_fraction} |`,
  );
  return [head, sep, ...lines].join('\n');
}

function passThrough(args: readonly string[]): string[] {
  const out: string[] = [];
  for (const flag of ['--cases', '--reps']) {
    const i = args.indexOf(flag);
    if (i >= 0) out.push(flag, args[i + 1]!);
  }
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const childIdx = args.indexOf('--child');
  const quick = args.includes('--quick');
  if (childIdx >= 0) return child(args[childIdx + 1] as BackendName, quick);
  if (!existsSync(`${MODEL_DIR}onnx/matmul.onnx`)) {
    execFileSync('/usr/bin/python3', [`${ROOT}bench/make_bench_model.py`, MODEL_DIR], { stdio: 'inherit' });
  }
  const bIdx = args.indexOf('--backends');
  const names = (bIdx >= 0 ? args[bIdx + 1]!.split(',') : quick ? ['node'] : Object.keys(BACKENDS)) as BackendName[];
  const date = new Date().toISOString().slice(0, 10);
  mkdirSync(`${ROOT}bench/results`, { recursive: true });
  const all: CaseResult[] = [];
  let tokenizer = '';
  for (const name of names) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', name, ...(quick ? ['--quick'] : []), ...passThrough(args)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * 2 ** 20,
    });
    if (r.status !== 0) throw new Error(`bench child ${name} failed with status ${r.status}`);
    const parsed = JSON.parse(r.stdout.trim().split('\n').pop()!) as { tokenizer: string; results: CaseResult[] };
    tokenizer = parsed.tokenizer;
    all.push(...parsed.results);
    const file = `${ROOT}bench/results/${date}-${name}${quick ? '-quick' : ''}.json`;
    // Runs of a subset (--cases) merge into the day's file, replacing the cases they re-measured.
    if (existsSync(file) && args.includes('--cases')) {
      const old = (JSON.parse(readFileSync(file, 'utf8')) as { results: CaseResult[] }).results;
      const fresh = new Set(parsed.results.map((r) => `${r.tokens}x${r.spans}`));
      parsed.results = [...old.filter((r) => !fresh.has(`${r.tokens}x${r.spans}`)), ...parsed.results].sort((a, b) => a.tokens - b.tokens || a.spans - b.spans);
    }
    const model = JSON.parse(readFileSync(`${MODEL_DIR}config.json`, 'utf8')) as unknown;
    writeFileSync(file, JSON.stringify({ date, machine: machine(), model: { dir: '.bench-model (random weights, embedded shapes, 4,608 positions)', config: model }, cases: tokenizer, results: parsed.results }, null, 2) + '\n');
  }
  if (!quick) process.stdout.write(`\n${table(all)}\n\nMachine: ${machine()}\n`);
  const summary = all.find((r) => r.backend === 'onnxruntime-node' && r.tokens === 2048 && r.spans === 3);
  if (args.includes('--json') && summary) {
    const { computed_tokens_ratio_vs_naive, trie_minimum_ratio, p50_speedup_vs_naive, p50_speedup_vs_transformersjs, peak_memory_ratio_vs_transformersjs, matmul_peak_fraction } = summary;
    process.stdout.write(
      `${JSON.stringify({ case: '2k tokens / 3 spans', backend: summary.backend, model: '.bench-model: random weights, hidden 256, 4 layers, 2x128 heads, vocab 4096', computed_tokens: summary.computed_tokens, naive_tokens: summary.naive_tokens, computed_tokens_ratio_vs_naive, trie_minimum_ratio, p50_speedup_vs_naive, p50_speedup_vs_transformersjs, peak_memory_ratio_vs_transformersjs, matmul_peak_fraction, p50_ms: summary.p50_ms, max_abs_logprob_diff_vs_naive: summary.max_abs_logprob_diff_vs_naive })}\n`,
    );
  }
}

await main();
