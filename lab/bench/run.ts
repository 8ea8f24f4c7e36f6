/**
 * `npm run bench`: prefix-sharing leave-one-out vs naive leave-one-out vs the transformers.js-style path,
 * and vs the backend's own matmul peak, on generated guard cases of ~512 / 2k / 4k tokens with 1 / 3 / 8 spans.
 *
 * Node backends (onnxruntime-node, onnxruntime-web wasm with 1 and 2 threads) run in a child process each
 * (onnxruntime-web's wasm thread count is fixed per process, and RSS deltas are cleaner); Chromium backends
 * (its wasm with 1 and 2 threads, WebGPU) run the same measurement in a page through Playwright
 * (lab/bench/browser.ts); `dawn-webgpu` runs onnxruntime-web's WebGPU EP in a Node child on Dawn (lab/bench/dawn.ts),
 * for GPU machines without a browser. Flags: --quick (onnxruntime-node, the 2k-token / 3-span case only), --json
 * (the LAST stdout line is the 2k / 3-span onnxruntime-node summary), --backends node,wasm1,wasm2,chromium-wasm1,
 * chromium-wasm2,chromium-webgpu,dawn-webgpu (default: all but the WebGPU ones, which need a GPU to mean anything),
 * --cases 2048x3,512x1, --reps N, --dawn-request FILE (dawn-webgpu: only write its request, for lab/bench/gpu/pack.sh).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import { createOrtSession, type Backend, type OrtSession } from '../../src/engine/ort-session.js';
import { defaultBatchBytes, scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import type { ModelDims } from '../../src/engine/scorer.js';
import { createProxyTokenizer, type ProxyTokenizer } from '../../src/engine/tokenizer.js';
import { CHROMIUM_PATH } from '../../chromium.config.js';
import { benchGuards, guardsTable } from './guards.js';
import { benchWindows, windowsTable } from './windows.js';
import { machine } from './machine.js';
import { peakRssDelta } from './memory.js';
import { writeBenchModel } from './bench-model.js';
import type { AdapterInfo, DawnBenchRequest, DawnBenchResult } from './dawn.js';
import { benchCase, buildCase, matmulPeakGflops, PATHS, r3, syntheticCase, type BenchCase, type BenchSession, type CaseResult, type CaseSpec, type PathName } from './cases.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL_DIR = `${ROOT}.bench-model/`;
const SIZES = [512, 2048, 4096] as const;
const SPANS = [1, 3, 8] as const;
/** Backends run in a child process each (onnxruntime-web's wasm thread count is fixed per process; RSS deltas are cleaner). */
const NODE_BACKENDS = { node: { backend: 'node', threads: undefined }, wasm1: { backend: 'wasm', threads: 1 }, wasm2: { backend: 'wasm', threads: 2 } } as const;
/** Backends run in a Chromium page each, through Playwright (lab/bench/browser.ts). */
const BROWSER_BACKENDS = {
  'chromium-wasm1': { backend: 'wasm', threads: 1 },
  'chromium-wasm2': { backend: 'wasm', threads: 2 },
  'chromium-webgpu': { backend: 'webgpu', threads: undefined },
} as const;
/** onnxruntime-web's WebGPU EP in a Node child on Dawn (lab/bench/dawn.ts): WebGPU where there is a GPU but no browser. */
const DAWN_BACKEND = 'dawn-webgpu';
type NodeBackendName = keyof typeof NODE_BACKENDS;
type BrowserBackendName = keyof typeof BROWSER_BACKENDS;
type BackendName = NodeBackendName | BrowserBackendName | typeof DAWN_BACKEND;
const TOKENIZED = 'proxy tokenizer on generator text';
const SYNTHETIC = 'synthetic ids';

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

/** `--probe BACKEND PATH TOKENSxSPANS`: one path's first run on one case in this (fresh) process; prints its peak RSS delta. */
async function probe(name: NodeBackendName, path: PathName, specArg: string): Promise<void> {
  const [tokens, spans] = specArg.split('x').map(Number) as [number, number];
  const dims = benchDims();
  const [c] = casesFor([{ tokens, spans }], dims, loadTokenizer());
  const session = await opener(name)(readFileSync(`${MODEL_DIR}onnx/model.onnx`));
  const mib = await peakRssDelta(() => PATHS[path](session, dims, c!.sequences));
  await session.release();
  process.stdout.write(`${mib}\n`);
}

/** Runs `probe` in a child process: each path's peak memory measured from the same fresh start. */
function probeChild(name: NodeBackendName, path: PathName, spec: CaseSpec): number {
  return Number(runChild(['--probe', name, path, `${spec.tokens}x${spec.spans}`], `bench memory probe ${name} ${path}`));
}

/**
 * The cases a backend runs: --cases, or --quick's standard case, or all on the fast backends (onnxruntime-node,
 * dawn-webgpu, which is only worth running on a GPU) and 512 tokens + the standard case elsewhere (wasm is ~4x slower).
 */
function specsFor(backend: Backend | typeof DAWN_BACKEND, quick: boolean, args: readonly string[]): CaseSpec[] {
  const casesArg = args.indexOf('--cases');
  if (casesArg >= 0) return args[casesArg + 1]!.split(',').map((c) => c.split('x').map(Number) as [number, number]).map(([tokens, spans]) => ({ tokens, spans }));
  if (quick) return [{ tokens: 2048, spans: 3 }];
  const all = SIZES.flatMap((tokens) => SPANS.map((spans) => ({ tokens, spans })));
  return backend === 'node' || backend === DAWN_BACKEND ? all : all.filter((c) => c.tokens === 512 || (c.tokens === 2048 && c.spans === 3));
}

function repsFor(backend: Backend | typeof DAWN_BACKEND, spec: CaseSpec, quick: boolean, args: readonly string[]): number {
  const repsArg = args.indexOf('--reps');
  const reps = repsArg >= 0 ? Number(args[repsArg + 1]) : quick ? 7 : spec.tokens >= 4096 ? 3 : spec.tokens >= 2048 ? 5 : 7;
  return backend !== 'node' && backend !== DAWN_BACKEND && spec.tokens >= 2048 ? Math.min(2, reps) : reps;
}

function benchDims(): ModelDims {
  const cfg = JSON.parse(readFileSync(`${MODEL_DIR}config.json`, 'utf8')) as Record<string, number>;
  return dimsFromConfig(cfg, cfg['pad_token_id']!);
}

function casesFor(specs: readonly CaseSpec[], dims: ModelDims, tok: ProxyTokenizer | undefined): BenchCase[] {
  return specs.map((spec) => (tok ? buildCase(tok, spec) : syntheticCase(dims, spec)));
}

/** Opens model bytes on a Node backend. */
function opener(name: NodeBackendName): (bytes: Uint8Array) => Promise<OrtSession> {
  const { backend, threads }: { backend: Backend; threads: number | undefined } = NODE_BACKENDS[name];
  return (bytes) => createOrtSession(bytes, { backend, ...(threads ? { wasmThreads: threads } : {}) });
}

/** Runs this script in a child process with `args`; returns the last line it printed. */
function runChild(args: readonly string[], what: string): string {
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 2 ** 20,
  });
  if (r.status !== 0) throw new Error(`${what} failed with status ${r.status}`);
  return r.stdout.trim().split('\n').pop()!;
}

async function child(name: NodeBackendName, quick: boolean, args: readonly string[]): Promise<void> {
  const dims = benchDims();
  const tok = loadTokenizer();
  const { backend, threads } = NODE_BACKENDS[name];
  const model = readFileSync(`${MODEL_DIR}onnx/model.onnx`);
  const open = opener(name);
  const bs: BenchSession = {
    name: name === 'node' ? 'onnxruntime-node' : `onnxruntime-web wasm ${threads} thread(s)`,
    create: () => open(model),
    matmulPeakGflops: (m) => matmulPeakGflops(() => open(readFileSync(`${MODEL_DIR}onnx/matmul.onnx`)), dims, m),
    pathMemory: async (path, spec) => probeChild(name, path, spec),
  };
  const specs = specsFor(backend, quick, args);
  const cases = casesFor(specs, dims, tok);
  const out: CaseResult[] = [];
  for (const [k, spec] of specs.entries()) {
    const c = cases[k]!;
    const r = await benchCase(bs, dims, spec, c, repsFor(backend, spec, quick, args));
    process.stderr.write(`${bs.name} ${spec.tokens}/${spec.spans}: ${JSON.stringify(r)}\n`);
    out.push(r);
  }
  const memory_budget = name === 'node' && !quick && !args.includes('--cases') ? await memoryBudget(await open(model), dims) : undefined;
  process.stdout.write(`${JSON.stringify({ tokenizer: tok ? TOKENIZED : SYNTHETIC, results: out, ...(memory_budget ? { memory_budget } : {}) })}\n`);
}

/** The default memory budget on a check with many untrusted spans: what the prefix path's estimate reached against it. */
interface MemoryBudgetRun {
  spans: number;
  variants: number;
  context_tokens: number;
  estimated_peak_mib: number;
  default_budget_mib: number;
  within_budget: boolean;
  computed_tokens: number;
  trie_minimum_tokens: number;
  forward_passes: number;
  ms: number;
}

/**
 * One check of 4k tokens with 100 untrusted spans (102 leave-one-out variants and the all-spans group) through
 * the prefix path at its default budget, once: its estimated peak must stay within that budget while it still
 * computes only the trie minimum. (A test did this on the tiny model; under load it took 97 s, issue 34.)
 */
async function memoryBudget(session: OrtSession, dims: ModelDims): Promise<MemoryBudgetRun> {
  const c = syntheticCase(dims, { tokens: 4096, spans: 100 });
  const longest = Math.max(...c.sequences.map((s) => s.context.length + s.action.length));
  const budget = defaultBatchBytes(dims, longest, c.sequences[0]!.action.length);
  const t0 = performance.now();
  const { stats } = await scoreSequencesShared(session, dims, c.sequences);
  const ms = performance.now() - t0;
  await session.release();
  return {
    spans: 100,
    variants: c.sequences.length,
    context_tokens: c.contextTokens,
    estimated_peak_mib: r3(stats.peakEstimatedBytes / 2 ** 20),
    default_budget_mib: r3(budget / 2 ** 20),
    within_budget: stats.peakEstimatedBytes <= budget,
    computed_tokens: stats.computedTokens,
    trie_minimum_tokens: stats.trieMinimumTokens,
    forward_passes: stats.forwardPasses,
    ms: Math.round(ms),
  };
}

/** What one backend measured (browser backends also name the browser, dawn-webgpu its runtime, and WebGPU ones the adapter). */
interface BackendRun {
  tokenizer: string;
  results: CaseResult[];
  memory_budget?: MemoryBudgetRun;
  browser?: string;
  runtime?: string;
  adapter?: string | AdapterInfo | null;
}

/** Runs a Chromium backend in this process: the cases are built here and scored in the page. */
async function browserBackend(name: BrowserBackendName, quick: boolean, args: readonly string[]): Promise<BackendRun> {
  const { backend, threads } = BROWSER_BACKENDS[name];
  const dims = benchDims();
  const tok = loadTokenizer();
  const specs = specsFor(backend, quick, args);
  const cases = casesFor(specs, dims, tok).map((c, k) => ({ spec: specs[k]!, ...c, reps: repsFor(backend, specs[k]!, quick, args) }));
  if (backend === 'webgpu') process.stderr.write('chromium-webgpu: on a software adapter (no GPU here) its times are not speed numbers; run it on a GPU machine\n');
  // Imported here, not at the top: Vite and Playwright in a Node backend's heap made its prefix-path checks ~10%
  // slower (a larger heap to mark at each of the GCs its KV buffers trigger), and only browser backends need them.
  const { runInChromium } = await import('./browser.js');
  const run = await runInChromium({ backend, ...(threads ? { threads } : {}), dims, cases, modelDir: MODEL_DIR, log: (line) => process.stderr.write(`${line}\n`) });
  return { tokenizer: tok ? TOKENIZED : SYNTHETIC, ...run };
}

/**
 * Runs dawn-webgpu: the cases are built here and scored in a Node child (lab/bench/dawn.ts) on Dawn's WebGPU.
 * With --dawn-request FILE it only writes the child's request there (lab/bench/gpu/pack.sh) and returns null.
 */
function dawnBackend(quick: boolean, args: readonly string[]): BackendRun | null {
  const dims = benchDims();
  const tok = loadTokenizer();
  const specs = specsFor(DAWN_BACKEND, quick, args);
  const request: DawnBenchRequest = {
    dims,
    modelDir: MODEL_DIR,
    ortWasmDir: `${ROOT}node_modules/onnxruntime-web/dist/`,
    cases: casesFor(specs, dims, tok).map((c, k) => ({ spec: specs[k]!, ...c, reps: repsFor(DAWN_BACKEND, specs[k]!, quick, args) })),
  };
  const requestArg = args.indexOf('--dawn-request');
  const file = requestArg >= 0 ? args[requestArg + 1]! : `${ROOT}lab/bench/results/tmp/dawn-request.json`;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ ...request, tokenizer: tok ? TOKENIZED : SYNTHETIC }));
  if (requestArg >= 0) return null;
  process.stderr.write('dawn-webgpu: on a software adapter (no GPU here) its times are not speed numbers; run it on a GPU machine (lab/bench/gpu/)\n');
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', `${ROOT}lab/bench/dawn.ts`, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`bench child ${DAWN_BACKEND} failed with status ${r.status}`);
  const run = JSON.parse(r.stdout.trim().split('\n').pop()!) as DawnBenchResult;
  return { tokenizer: tok ? TOKENIZED : SYNTHETIC, ...run };
}

function table(rows: CaseResult[]): string {
  const head = '| backend | ctx tokens | spans | computed / naive tok | / trie min | p50 ms ours / naive / tjs | p95 ms ours | max ms ours | longest event-loop stall ms ours / naive | speedup vs naive | vs tjs | RSS Δ MiB ours / tjs | mem ratio tjs/ours | GFLOP/s / matmul peak | fraction |';
  const sep = '|' + '---|'.repeat(15);
  const lines = rows.map((r) =>
    `| ${r.backend} | ${r.context_tokens} | ${r.spans} | ${r.computed_tokens} / ${r.naive_tokens} (${r.computed_tokens_ratio_vs_naive}) | ${r.trie_minimum_ratio} | ${r.p50_ms.prefix.toFixed(0)} / ${r.p50_ms.naive.toFixed(0)} / ${r.p50_ms.transformersjs.toFixed(0)} | ${r.p95_ms.prefix.toFixed(0)} | ${r.max_ms.prefix.toFixed(0)} | ${r.longest_stall_ms.prefix.toFixed(0)} / ${r.longest_stall_ms.naive.toFixed(0)} | ${r.p50_speedup_vs_naive} | ${r.p50_speedup_vs_transformersjs} | ${r.rss_delta_mib ? `${r.rss_delta_mib.prefix.toFixed(0)} / ${r.rss_delta_mib.transformersjs.toFixed(0)}` : 'n/a'} | ${r.peak_memory_ratio_vs_transformersjs ?? 'n/a'} | ${r.gflops_achieved.toFixed(1)} / ${r.matmul_peak_gflops.toFixed(1)} | ${r.matmul_peak_fraction} |`,
  );
  return [head, sep, ...lines].join('\n');
}

function nodeChild(name: NodeBackendName, quick: boolean, args: readonly string[]): BackendRun {
  return JSON.parse(runChild(['--child', name, ...(quick ? ['--quick'] : []), ...passThrough(args)], `bench child ${name}`)) as BackendRun;
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
  if (childIdx >= 0) return child(args[childIdx + 1] as NodeBackendName, quick, args);
  const probeIdx = args.indexOf('--probe');
  if (probeIdx >= 0) return probe(args[probeIdx + 1] as NodeBackendName, args[probeIdx + 2] as PathName, args[probeIdx + 3]!);
  if (!existsSync(`${MODEL_DIR}onnx/matmul.onnx`)) {
    writeBenchModel(MODEL_DIR);
  }
  const bIdx = args.indexOf('--backends');
  const known = [...Object.keys(NODE_BACKENDS), ...Object.keys(BROWSER_BACKENDS), DAWN_BACKEND];
  // By default every backend this machine has, but WebGPU only when asked: without a GPU it runs on a software adapter.
  const available = quick ? ['node'] : [...Object.keys(NODE_BACKENDS), ...(existsSync(CHROMIUM_PATH) ? ['chromium-wasm1', 'chromium-wasm2'] : [])];
  const names = (bIdx >= 0 ? args[bIdx + 1]!.split(',') : available) as BackendName[];
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) throw new Error(`unknown backend(s) ${unknown.join(', ')}: --backends takes a comma-separated list of ${known.join(', ')}`);
  const date = new Date().toISOString().slice(0, 10);
  mkdirSync(`${ROOT}lab/bench/results`, { recursive: true });
  const all: CaseResult[] = [];
  let tokenizer = '';
  for (const name of names) {
    const parsed =
      name === DAWN_BACKEND ? dawnBackend(quick, args) : name in BROWSER_BACKENDS ? await browserBackend(name as BrowserBackendName, quick, args) : nodeChild(name as NodeBackendName, quick, args);
    if (parsed === null) continue;
    tokenizer = parsed.tokenizer;
    all.push(...parsed.results);
    const file = `${ROOT}lab/bench/results/${date}-${name}${quick ? '-quick' : ''}.json`;
    // Runs of a subset (--cases) merge into the day's file, replacing the cases they re-measured.
    if (existsSync(file) && args.includes('--cases')) {
      const old = (JSON.parse(readFileSync(file, 'utf8')) as { results: CaseResult[] }).results;
      const fresh = new Set(parsed.results.map((r) => `${r.tokens}x${r.spans}`));
      parsed.results = [...old.filter((r) => !fresh.has(`${r.tokens}x${r.spans}`)), ...parsed.results].sort((a, b) => a.tokens - b.tokens || a.spans - b.spans);
    }
    const model = JSON.parse(readFileSync(`${MODEL_DIR}config.json`, 'utf8')) as unknown;
    writeFileSync(file, JSON.stringify({ date, machine: machine(), model: { dir: '.bench-model (random weights, embedded shapes, 4,608 positions)', config: model }, ...(parsed.browser ? { browser: parsed.browser, adapter: parsed.adapter ?? null } : {}), ...(parsed.runtime ? { runtime: parsed.runtime, adapter: parsed.adapter ?? null } : {}), cases: tokenizer, results: parsed.results, ...(parsed.memory_budget ? { memory_budget: parsed.memory_budget } : {}) }, null, 2) + '\n');
    const mb = parsed.memory_budget;
    if (mb) {
      process.stdout.write(
        `memory budget (${name}, ${mb.context_tokens} tokens, ${mb.spans} spans, ${mb.variants} variants): estimated peak ${mb.estimated_peak_mib} MiB of the default ${mb.default_budget_mib} MiB (${mb.within_budget ? 'within' : 'OVER'}), ${mb.computed_tokens} tokens computed, trie minimum ${mb.trie_minimum_tokens}, ${mb.forward_passes} passes, ${mb.ms} ms\n`,
      );
      if (!mb.within_budget || mb.computed_tokens !== mb.trie_minimum_tokens) process.exitCode = 1;
    }
  }
  if (!quick) process.stdout.write(`\n${table(all)}\n\nMachine: ${machine()}\n`);
  // The whole guard per host (lab/bench/guards.ts): the worker's slowdown against onnxruntime-node in process.
  if (!quick && bIdx < 0 && !args.includes('--cases')) {
    const rows = await benchGuards(10, 2);
    writeFileSync(`${ROOT}lab/bench/results/${date}-guards.json`, `${JSON.stringify({ date, machine: machine(), model: 'embedded q4', cases: 10, reps: 2, rows }, null, 2)}\n`);
    process.stdout.write(`\nOne check through each guard (embedded model, 10 generated cases):\n${guardsTable(rows)}\n`);
    // Windowed attribution (lab/bench/windows.ts): a check four times the embedded model's window.
    const windowRows = await benchWindows(5);
    writeFileSync(`${ROOT}lab/bench/results/${date}-windows.json`, `${JSON.stringify({ date, machine: machine(), model: 'embedded q4, in process', reps: 5, rows: windowRows }, null, 2)}\n`);
    process.stdout.write(`\nA check longer than the window, scored in windows (embedded model, in process):\n${windowsTable(windowRows)}\n`);
  }
  const summary = all.find((r) => r.backend === 'onnxruntime-node' && r.tokens === 2048 && r.spans === 3);
  if (args.includes('--json') && summary) {
    const { computed_tokens_ratio_vs_naive, trie_minimum_ratio, p50_speedup_vs_naive, p50_speedup_vs_transformersjs, peak_memory_ratio_vs_transformersjs, matmul_peak_fraction } = summary;
    process.stdout.write(
      `${JSON.stringify({ case: '2k tokens / 3 spans', backend: summary.backend, model: '.bench-model: random weights, hidden 256, 4 layers, 2x128 heads, vocab 4096', computed_tokens: summary.computed_tokens, naive_tokens: summary.naive_tokens, computed_tokens_ratio_vs_naive, trie_minimum_ratio, p50_speedup_vs_naive, p50_speedup_vs_transformersjs, peak_memory_ratio_vs_transformersjs, matmul_peak_fraction, p50_ms: summary.p50_ms, max_ms: summary.max_ms, longest_stall_ms: summary.longest_stall_ms, max_abs_logprob_diff_vs_naive: summary.max_abs_logprob_diff_vs_naive })}\n`,
    );
  }
}

await main();
