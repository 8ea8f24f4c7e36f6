/**
 * The one place that touches onnxruntime: creating a session on a backend and running it.
 *
 * onnxruntime-node (native CPU) in Node, onnxruntime-web (wasm, or webgpu) in browsers and as
 * Node's fallback. Both share onnxruntime-common's API, so the scorer sees one interface.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-web';
import type { OrtBackend as Backend } from '../core/backend-plan.js';
import { BackendUnavailableError, IntegrityError, ModelLoadError } from '../core/errors.js';
import { classifyInferenceError } from './inference-errors.js';
import type { ExternalDataFile } from './model-files.js';
import { externalDataLocations } from './onnx-external-data.js';

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
  /** The model's external data files (weights stored beside the graph), by the name the graph uses: bytes, or verified files on disk. */
  externalData?: readonly ExternalDataFile[];
}

/**
 * The onnxruntime-node release edgearmor is built and tested with (package.json's optional peer dependency):
 * the same line as onnxruntime-web, so both share one onnxruntime-common.
 */
export const ONNXRUNTIME_NODE_VERSION = '1.30.0';

/** The command that installs the native backend, as the error for its absence says it. */
export const ONNXRUNTIME_NODE_INSTALL = `npm install onnxruntime-node@${ONNXRUNTIME_NODE_VERSION}`;

/**
 * Whether an import failed because the package itself is not installed, rather than because a file or
 * binding inside it does not load (whose messages name that file). Follows `cause`: test runners and
 * bundlers wrap a failed import in an error of their own.
 */
function isMissingPackage(error: unknown, name: string): boolean {
  const missing = new RegExp(`Cannot find (package|module) '${name}'`);
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && missing.test(message)) return true;
  }
  return false;
}

/** Why the native backend cannot run: not installed (an optional peer dependency), or installed with a binding that does not load. */
function nativeUnavailable(error: unknown): BackendUnavailableError {
  // With backend 'auto' the caller's next backend (wasm) takes over and this becomes the status's fallbackReason.
  const fallback = "backend 'auto' runs the model on onnxruntime-web's WASM backend instead";
  if (isMissingPackage(error, 'onnxruntime-node')) {
    return new BackendUnavailableError(
      `onnxruntime-node is not installed: it is an optional peer dependency of edgearmor, needed for the native CPU backend in Node; install it with \`${ONNXRUNTIME_NODE_INSTALL}\` (${fallback})`,
      { backend: 'node', install: ONNXRUNTIME_NODE_INSTALL },
      { cause: error },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new BackendUnavailableError(`onnxruntime-node could not be loaded (${message}); the native CPU backend is unavailable (${fallback})`, { backend: 'node' }, { cause: error });
}

async function importOrt(backend: Backend): Promise<OrtModule> {
  // Import by backend so a browser bundle never pulls in the native binding and Node never the GPU build.
  switch (backend) {
    case 'node':
      try {
        return (await import('onnxruntime-node')) as unknown as OrtModule;
      } catch (e) {
        throw nativeUnavailable(e);
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

/** The directory part of a local path, POSIX or Windows. */
function directoryOf(file: string): string {
  return file.slice(0, Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\')));
}

/** Whether this is a browser or worker (onnxruntime-web fetches a string there; in Node it reads it as a path). */
function isBrowser(): boolean {
  return typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node !== 'string';
}

/**
 * A verified Blob as onnxruntime-web takes it. In a browser, an object URL: onnxruntime-web fetches it
 * and, past 1 GB, streams it into one buffer it sizes from Content-Length (falling back to WebAssembly
 * memory where an ArrayBuffer that large is refused), where a Blob would go through `Blob.arrayBuffer()`.
 * The URL is the caller's to revoke once the session exists. In Node (onnxruntime-web's wasm there), the Blob.
 */
function blobSource(blob: Blob, urls: string[]): Blob | string {
  if (!isBrowser() || typeof URL.createObjectURL !== 'function') return blob;
  const url = URL.createObjectURL(blob);
  urls.push(url);
  return url;
}

/**
 * Puts the external data into the session options: bytes as they are; files on disk (Node) by path, so
 * onnxruntime reads them itself and no copy passes through JavaScript (nor its 2 GiB limit on one read).
 * onnxruntime-node's binding takes only bytes in `externalData`, so there the files' directory goes in
 * onnxruntime's own setting for a model loaded from memory whose data lies in a folder (the name the
 * graph uses is the file's name there, model-files.ts); onnxruntime-web takes each file's path. Verified
 * Blobs (the browser's streamed downloads) go to onnxruntime-web as object URLs, pushed on `urls`.
 * Returns the files on disk, to be checked once the session has read them.
 */
async function externalDataOptions(sessionOptions: InferenceSession.SessionOptions, options: OrtSessionOptions, urls: string[]): Promise<Array<Extract<ExternalDataFile, { local: unknown }>>> {
  const all = options.externalData ?? [];
  const onDisk = all.filter((f): f is Extract<ExternalDataFile, { local: unknown }> => 'local' in f);
  const listed: Array<{ path: string; data: Uint8Array | Blob | string }> = [];
  for (const f of all) {
    if ('data' in f) listed.push({ path: f.path, data: f.data });
    // onnxruntime-node's binding takes bytes only; its files are on disk in Node, so a Blob there is a reader used out of place.
    else if ('blob' in f) listed.push({ path: f.path, data: options.backend === 'node' ? new Uint8Array(await f.blob.arrayBuffer()) : blobSource(f.blob, urls) });
  }
  if (onDisk.length > 0 && options.backend === 'node') {
    const folders = new Set(onDisk.map((f) => directoryOf(f.local.file)));
    if (folders.size > 1) throw new ModelLoadError(`the model's external data files lie in ${folders.size} directories; onnxruntime reads them from one, beside the onnx file`, { folders: [...folders] });
    const extra = (sessionOptions.extra ?? {}) as { session?: Record<string, unknown> };
    sessionOptions.extra = { ...extra, session: { ...extra.session, model_external_initializers_file_folder_path: [...folders][0]! } };
  } else {
    listed.push(...onDisk.map((f) => ({ path: f.path, data: f.local.file })));
  }
  if (listed.length > 0) sessionOptions.externalData = listed;
  return onDisk;
}

/**
 * onnxruntime reads files on disk by the names the graph gives, from their folder: a name that is not one
 * of the verified files (another file in that folder, or a path out of it) is refused before it can be read.
 */
function refuseUnverifiedLocations(model: Uint8Array, files: readonly ExternalDataFile[]): void {
  const verified = new Set(files.map((f) => f.path));
  for (const location of externalDataLocations(model)) {
    if (!verified.has(location)) {
      throw new IntegrityError(`the model's graph reads external data from "${location}", which is not one of its verified files (${[...verified].join(', ')}): refusing to let onnxruntime read an unverified file, which may indicate tampering`, { location });
    }
  }
}

/**
 * The files on disk were verified by hashing them before the session was created, and onnxruntime read
 * them afterwards: a process that can write to the model directory could change one in between. After
 * creation each file must still be the one hashed (same inode, size, mtime and ctime, the last of which
 * no write can leave unchanged), or the session is refused. So a session runs only on files that were
 * unmodified from their hash to the end of loading. onnxruntime may map external data into memory rather
 * than copy it; a later write to a mapped file would reach the weights, which is why model directories
 * must be writable only by those trusted to change the model.
 */
async function refuseChanged(session: InferenceSession, onDisk: ReadonlyArray<Extract<ExternalDataFile, { local: unknown }>>): Promise<void> {
  for (const f of onDisk) {
    if (await f.local.unchanged()) continue;
    await session.release();
    throw new IntegrityError(`model file "${f.local.file}" changed after it was verified and while onnxruntime read it: refusing the model, which may indicate tampering`, { file: f.local.file });
  }
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
  const urls: string[] = [];
  const onDisk = await externalDataOptions(sessionOptions, options, urls);
  if (onDisk.length > 0) refuseUnverifiedLocations(model, options.externalData!);
  if (options.backend === 'webgpu' && options.gpuBufferOutputs !== undefined && options.gpuBufferOutputs.length > 0) {
    sessionOptions.preferredOutputLocation = Object.fromEntries(options.gpuBufferOutputs.map((name) => [name, 'gpu-buffer' as const]));
  }
  let session: InferenceSession;
  try {
    session = await ort.InferenceSession.create(model, sessionOptions);
  } finally {
    // onnxruntime-web has read the data into its memory once create settles: the Blobs can go.
    for (const url of urls) URL.revokeObjectURL(url);
  }
  await refuseChanged(session, onDisk);
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
