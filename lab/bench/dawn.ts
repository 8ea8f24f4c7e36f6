/**
 * The benchmark's `dawn-webgpu` backend, run as its own Node process: onnxruntime-web's WebGPU EP in Node on
 * Dawn (the `webgpu` package's `navigator.gpu`), scoring the same cases with the same code as every other
 * backend (lab/bench/cases.ts). For a GPU machine with no browser: lab/bench/gpu/pack.sh bundles this file alone.
 *
 * Usage: `node --expose-gc [--import tsx] lab/bench/dawn.ts REQUEST.json [--cases 2048x3,...] [--reps N]` (N replaces
 * the request's timed repetitions), or `... lab/bench/dawn.ts
 * --adapter` to print the adapter Dawn picks. REQUEST.json is a
 * {@link DawnBenchRequest} (lab/bench/run.ts writes it: the cases are tokenized there, so this process needs
 * neither the tokenizer nor onnxruntime-node). The LAST stdout line is a {@link DawnBenchResult}. Environment:
 * EDGEARMOR_BENCH_MODEL_DIR and EDGEARMOR_ORT_WASM_DIR override the request's folders, EDGEARMOR_DAWN_OPTIONS
 * passes comma-separated Dawn toggles to `create()` (e.g. `backend=vulkan`).
 */
import { readFileSync } from 'node:fs';
import { createOrtSession, type OrtSession } from '../../src/engine/ort-session.js';
import { scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import { presentOutputNames, scoreSequences, type ModelDims, type ScoreSequence } from '../../src/engine/scorer.js';
import { benchCase, matmulPeakGflops, quantile, r3, timed, type BenchCase, type BenchSession, type CaseResult, type CaseSpec } from './cases.js';
import { peakRssDelta } from './memory.js';

/** What the harness asks a dawn-webgpu process to measure. */
export interface DawnBenchRequest {
  dims: ModelDims;
  /** Holds onnx/model.onnx and onnx/matmul.onnx. */
  modelDir: string;
  /** The folder holding onnxruntime-web's {@link ORT_WASM}. */
  ortWasmDir: string;
  cases: Array<BenchCase & { spec: CaseSpec; reps: number }>;
}

/** The adapter Dawn gave onnxruntime-web, as WebGPU's GPUAdapterInfo describes it. */
export interface AdapterInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
}

/** What a dawn-webgpu process measured, and on what. */
export interface DawnBenchResult {
  results: CaseResult[];
  runtime: string;
  adapter: AdapterInfo | null;
}

/** onnxruntime-web's wasm threads beside the GPU: 1, so no pthread worker re-runs a bundled copy of this script. */
const WASM_THREADS = 1;
/** The onnxruntime-web build its WebGPU entry (onnxruntime-web/webgpu) loads. */
const ORT_WASM = 'ort-wasm-simd-threaded.asyncify.wasm';

/** The Dawn bindings this backend was checked with (lab/bench/gpu/pack.sh installs the same). */
const WEBGPU_PACKAGE = 'webgpu@0.6.2';

interface GpuAdapterLike {
  info?: Partial<AdapterInfo>;
}

/**
 * Puts Dawn's `navigator.gpu` where onnxruntime-web looks for it, with the WebGPU constants (GPUBufferUsage, ...)
 * as globals, and records the adapter(s) onnxruntime-web asks for. `dawnOptions`: Dawn toggles, e.g. `backend=vulkan`.
 */
async function installDawn(dawnOptions: string[]): Promise<{ adapters: GpuAdapterLike[] }> {
  const { create, globals } = await import('webgpu').catch((error: unknown) => {
    throw new Error(`dawn-webgpu needs the webgpu package (Dawn's Node bindings), which is not a dependency: npm install --no-save ${WEBGPU_PACKAGE} (${String(error)})`);
  });
  Object.assign(globalThis, globals);
  // onnxruntime-web's threaded wasm uploads straight from its heap, a SharedArrayBuffer, and dawn.node
  // (webgpu 0.6.2) fails on shared views ("Invalid argument", or a segfault): hand it a private copy.
  const queue = (globals as { GPUQueue: { prototype: { writeBuffer(...a: unknown[]): void } } }).GPUQueue.prototype;
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (buffer: unknown, offset: unknown, data: unknown, ...rest: unknown[]) {
    const shared = ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer;
    return writeBuffer.call(this, buffer, offset, shared ? (data as Uint8Array).slice() : data, ...rest);
  };
  const gpu = create(dawnOptions) as { requestAdapter(options?: unknown): Promise<GpuAdapterLike | null> };
  const adapters: GpuAdapterLike[] = [];
  const requestAdapter = gpu.requestAdapter.bind(gpu);
  gpu.requestAdapter = async (options) => {
    const adapter = await requestAdapter(options);
    if (adapter) adapters.push(adapter);
    return adapter;
  };
  // Node 21+ has a navigator whose properties are getters; Node 20 has none.
  const nav = (globalThis as { navigator?: object }).navigator;
  if (nav) Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
  else Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  return { adapters };
}

function describe(adapter: GpuAdapterLike | undefined): AdapterInfo | null {
  const info = adapter?.info;
  if (!info) return null;
  return { vendor: info.vendor ?? '', architecture: info.architecture ?? '', device: info.device ?? '', description: info.description ?? '' };
}

/** Runs `request`'s cases (those named by `only`, in that order, when given) on onnxruntime-web's WebGPU EP over Dawn. */
async function runDawnBench(request: DawnBenchRequest, only: readonly string[] | undefined, reps: number | undefined, log: (line: string) => void): Promise<DawnBenchResult> {
  const dawnOptions = (process.env['EDGEARMOR_DAWN_OPTIONS'] ?? '').split(',').filter(Boolean);
  const { adapters } = await installDawn(dawnOptions);
  // The request's paths are the harness machine's; a packed run (lab/bench/gpu/run.sh) points at its own copies.
  const slash = (d: string) => (d.endsWith('/') ? d : `${d}/`);
  const dir = slash(process.env['EDGEARMOR_BENCH_MODEL_DIR'] ?? request.modelDir);
  const ortWasmDir = slash(process.env['EDGEARMOR_ORT_WASM_DIR'] ?? request.ortWasmDir);
  const [model, matmul] = [readFileSync(`${dir}onnx/model.onnx`), readFileSync(`${dir}onnx/matmul.onnx`)];
  // The same module instance createOrtSession imports. Node's fetch cannot read files, so the wasm goes in as bytes.
  const ort = await import('onnxruntime-web/webgpu');
  ort.env.wasm.wasmBinary = readFileSync(`${ortWasmDir}${ORT_WASM}`);
  const open = (bytes: Uint8Array): Promise<OrtSession> =>
    createOrtSession(bytes, {
      backend: 'webgpu',
      wasmThreads: WASM_THREADS,
      // As the engine and the Chromium page do: on WebGPU the KV cache stays in GPU buffers.
      gpuBufferOutputs: presentOutputNames(request.dims),
    });
  const bs: BenchSession = {
    name: 'dawn webgpu (node)',
    create: () => open(model),
    matmulPeakGflops: (m) => matmulPeakGflops(() => open(matmul), request.dims, m),
    // Host memory only: on a GPU, device buffers are not RSS.
    memoryDelta: peakRssDelta,
  };
  const byName = new Map(request.cases.map((c) => [`${c.spec.tokens}x${c.spec.spans}`, c]));
  const missing = (only ?? []).filter((n) => !byName.has(n));
  if (missing.length > 0) throw new Error(`case(s) ${missing.join(', ')} not in the request: it has ${[...byName.keys()].join(', ')}`);
  const cases = only ? only.map((n) => byName.get(n)!) : request.cases;
  const results: CaseResult[] = [];
  for (const c of cases) {
    const r = await benchCase(bs, request.dims, c.spec, c, reps ?? c.reps);
    if (process.env['EDGEARMOR_DAWN_PLANS'] === '1') Object.assign(r, await gpuPlans(bs, request.dims, c.sequences, reps ?? c.reps));
    log(`${r.backend} ${c.spec.tokens}/${c.spec.spans}: ${JSON.stringify(r)}`);
    results.push(r);
  }
  return { results, runtime: `Node ${process.version}, onnxruntime-web webgpu EP, Dawn (webgpu package)`, adapter: describe(adapters[0]) };
}

/**
 * EDGEARMOR_DAWN_PLANS=1: two scoring plans with fewer, larger passes, for a GPU where every pass costs a fixed
 * dispatch overhead: the prefix path with one budget for the whole check (no micro-batching, no chunking), and
 * naive leave-one-out in one batch. Times (p50, ms), passes, and agreement with the default prefix path.
 */
async function gpuPlans(bs: BenchSession, dims: ModelDims, sequences: ScoreSequence[], reps: number): Promise<Record<string, unknown>> {
  const session = await bs.create();
  const oneBudget = () => scoreSequencesShared(session, dims, sequences, { maxBatchBytes: 2 ** 31 });
  const oneBatch = () => scoreSequences(session, dims, sequences, { maxBatchTokens: 2 ** 24 });
  const reference = (await scoreSequencesShared(session, dims, sequences)).results;
  const [shared, batched] = [await oneBudget(), await oneBatch()];
  let diff = 0;
  reference.forEach((ref, i) =>
    ref.tokenLogProbs.forEach((v, k) => (diff = Math.max(diff, Math.abs(v - shared.results[i]!.tokenLogProbs[k]!), Math.abs(v - batched[i]!.tokenLogProbs[k]!)))),
  );
  const p50 = async (fn: () => Promise<unknown>) => r3(quantile(await timed(reps, fn), 0.5));
  const result = {
    plans_p50_ms: { prefix_one_budget: await p50(oneBudget), naive_one_batch: await p50(oneBatch) },
    plans_forward_passes: { prefix_one_budget: shared.stats.forwardPasses, naive_one_batch: 1 },
    plans_max_abs_logprob_diff: diff,
  };
  await session.release();
  return result;
}

/** `--adapter`: prints the adapter Dawn gives by default (as onnxruntime-web asks for one), or exits 1 when there is none. */
async function printAdapter(): Promise<void> {
  await installDawn((process.env['EDGEARMOR_DAWN_OPTIONS'] ?? '').split(',').filter(Boolean));
  const gpu = (navigator as unknown as { gpu: { requestAdapter(): Promise<GpuAdapterLike | null> } }).gpu;
  const info = describe((await gpu.requestAdapter()) ?? undefined);
  process.stdout.write(`${JSON.stringify(info)}\n`);
  process.exit(info ? 0 : 1);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--adapter')) return printAdapter();
  const casesArg = args.indexOf('--cases');
  const only = casesArg >= 0 ? args[casesArg + 1]!.split(',') : undefined;
  const repsArg = args.indexOf('--reps');
  const reps = repsArg >= 0 ? Number(args[repsArg + 1]) : undefined;
  const file = args.find((a, i) => !a.startsWith('--') && (i === 0 || !['--cases', '--reps'].includes(args[i - 1]!)));
  if (!file) throw new Error('usage: lab/bench/dawn.ts REQUEST.json [--cases 2048x3,...] [--reps N]');
  const request = JSON.parse(readFileSync(file, 'utf8')) as DawnBenchRequest;
  const result = await runDawnBench(request, only, reps, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  // Dawn's device keeps the event loop alive.
  process.exit(0);
}

await main();
