/**
 * The one place that touches onnxruntime: creating a session on a backend and running it.
 *
 * onnxruntime-node (native CPU) in Node, onnxruntime-web (wasm, or webgpu) in browsers and as
 * Node's fallback. Both share onnxruntime-common's API, so the scorer sees one interface.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-web';
import type { OrtBackend as Backend } from '../core/backend-plan.js';
import { BackendUnavailableError } from '../core/errors.js';
import { classifyInferenceError } from './inference-errors.js';

/** Where inference runs. */
export type { OrtBackend as Backend } from '../core/backend-plan.js';

/** The part of onnxruntime's module the engine uses. */
export interface OrtModule {
  InferenceSession: { create(model: Uint8Array, options?: InferenceSession.SessionOptions): Promise<InferenceSession> };
  Tensor: new (type: 'int64' | 'float32' | 'float16', data: BigInt64Array | Float32Array | Uint16Array, dims: readonly number[]) => Tensor;
  env: { wasm: { numThreads?: number; wasmPaths?: unknown; proxy?: boolean } };
}

/** A loaded model on one backend. */
export interface OrtSession {
  readonly backend: Backend;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /** Runs the model; `fetches` limits the outputs returned (all when absent). */
  run(feeds: Record<string, Tensor>, fetches?: readonly string[]): Promise<Record<string, Tensor>>;
  makeInt64(data: BigInt64Array, dims: readonly number[]): Tensor;
  makeFloat32(data: Float32Array, dims: readonly number[]): Tensor;
  /** A float16 tensor from its 16-bit patterns. */
  makeFloat16(bits: Uint16Array, dims: readonly number[]): Tensor;
  release(): Promise<void>;
}

/** Options for {@link createOrtSession}. */
export interface OrtSessionOptions {
  backend: Backend;
  /** wasm threads; onnxruntime-web's default when undefined. */
  wasmThreads?: number;
  /** Where onnxruntime-web finds its .wasm files (served by the app itself, never a CDN). */
  wasmPaths?: string | Record<string, string>;
  /**
   * WebGPU only: outputs left in GPU buffers (`preferredOutputLocation: 'gpu-buffer'`) instead of being
   * downloaded after each run, e.g. the present.N.key|value KV cache; readers call `Tensor.getData()`
   * for what they need. Ignored on other backends. @defaultValue []
   */
  gpuBufferOutputs?: readonly string[];
  /** The model's external data files (weights stored beside the graph), by the name the graph uses. */
  externalData?: ReadonlyArray<{ path: string; data: Uint8Array }>;
}

async function importOrt(backend: Backend): Promise<OrtModule> {
  // Import by backend so a browser bundle never pulls in the native binding and Node never the GPU build.
  switch (backend) {
    case 'node':
      try {
        return (await import('onnxruntime-node')) as unknown as OrtModule;
      } catch (e) {
        // A missing package or a native binding that does not load on this platform: the caller's next backend (wasm) takes over.
        throw new BackendUnavailableError(`onnxruntime-node could not be loaded (${(e as Error).message}); the native CPU backend is unavailable, onnxruntime-web's WASM backend runs the model instead`, { backend: 'node' }, { cause: e });
      }
    case 'wasm':
      // package.json maps #ort-wasm to onnxruntime-web's Node build in Node and to its wasm-only build
      // elsewhere: a browser asked for wasm loads the 14 MB plain runtime, not the 28 MB WebGPU one.
      return (await import('#ort-wasm')) as unknown as OrtModule;
    case 'webgpu':
      return (await import('onnxruntime-web/webgpu')) as unknown as OrtModule;
  }
}

function pointsAtCdn(paths: unknown): boolean {
  const urls = typeof paths === 'string' ? [paths] : paths !== null && typeof paths === 'object' ? Object.values(paths) : [];
  return urls.some((u) => typeof u === 'string' && /^https?:\/\/cdn\.jsdelivr\.net\//.test(u));
}

/** Creates an onnxruntime session for model bytes on the given backend. */
export async function createOrtSession(model: Uint8Array, options: OrtSessionOptions): Promise<OrtSession> {
  const ort = await importOrt(options.backend);
  if (options.backend !== 'node') {
    if (options.wasmThreads !== undefined) ort.env.wasm.numThreads = options.wasmThreads;
    if (options.wasmPaths !== undefined) ort.env.wasm.wasmPaths = options.wasmPaths;
    // Another library in the app may point the shared onnxruntime-web env at a CDN (transformers.js does on
    // import); without wasmPaths from the app, fall back to onnxruntime-web's own location, never the network.
    else if (pointsAtCdn(ort.env.wasm.wasmPaths)) delete ort.env.wasm.wasmPaths;
  }
  const sessionOptions: InferenceSession.SessionOptions = {
    executionProviders: [options.backend === 'node' ? 'cpu' : options.backend],
    graphOptimizationLevel: 'all',
    // Errors only: onnxruntime-web prints warnings (e.g. shape ops placed on CPU next to WebGPU) with console.error.
    logSeverityLevel: 3,
  };
  // onnxruntime-node's CPU threads spin between the ops of a pass by default. The guard shares its cores with its
  // host (an agent, a server, a test runner): spinning bought no speed alone and, beside a second busy process,
  // made 30 checks take 2.78x their time alone against 1.50x without (lab/bench/beside.ts; docs/speed.md).
  if (options.backend === 'node') sessionOptions.extra = { session: { intra_op: { allow_spinning: '0' } } };
  if (options.externalData !== undefined && options.externalData.length > 0) {
    sessionOptions.externalData = options.externalData.map((f) => ({ path: f.path, data: f.data }));
  }
  if (options.backend === 'webgpu' && options.gpuBufferOutputs !== undefined && options.gpuBufferOutputs.length > 0) {
    sessionOptions.preferredOutputLocation = Object.fromEntries(options.gpuBufferOutputs.map((name) => [name, 'gpu-buffer' as const]));
  }
  const session = await ort.InferenceSession.create(model, sessionOptions);
  return {
    backend: options.backend,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    run: async (feeds, fetches) => {
      let outputs: Record<string, Tensor>;
      try {
        outputs = (await (fetches === undefined ? session.run(feeds) : session.run(feeds, [...fetches]))) as Record<string, Tensor>;
      } catch (error) {
        throw classifyInferenceError(error, options.backend);
      }
      // onnxruntime-web's wasm in a Node thread runs each pass synchronously and resolves it as a microtask, so a
      // check's passes would run back to back without the event loop ever turning (a 5.9 s stall in process);
      // onnxruntime-node already runs each pass in a macrotask of its own. In a browser the wasm runs in a worker.
      if (options.backend === 'wasm' && typeof globalThis.setImmediate === 'function') await new Promise((resolve) => setImmediate(resolve));
      return outputs;
    },
    makeInt64: (data, dims) => new ort.Tensor('int64', data, dims),
    makeFloat32: (data, dims) => new ort.Tensor('float32', data, dims),
    makeFloat16: (bits, dims) => new ort.Tensor('float16', bits, dims),
    release: () => session.release(),
  };
}
