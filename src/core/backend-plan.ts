/**
 * The one backend planner: which onnxruntime backends a guard tries, in order, for the caller's
 * `backend` (or its older spelling `backends`) on this host, and why a preferred one is skipped.
 * Every shell (the worker, createNodeGuard) plans here; the engine only tries what the plan lists.
 */
import { BackendUnavailableError, InvalidOptionsError } from './errors.js';
import type { BackendName } from './guard-api.js';
import type { BackendPreference } from './runtime-options.js';
import { softwareAdapterReason, type WebGpuAdapterLike } from './webgpu-adapter.js';

/** An onnxruntime backend in this process (every backend name but a child process's and a scoring server's). */
export type OrtBackend = Exclude<BackendName, 'remote' | 'node-process'>;

/** What the caller asked for: a preference, or an explicit order (`backends`, Node only). */
export type BackendRequest = BackendPreference | readonly OrtBackend[];

/** The backends to try for a request, and why a preferred one was skipped. */
export interface BackendPlan {
  backends: OrtBackend[];
  fallbackReason: string | null;
  /**
   * In a Node worker thread whose request named onnxruntime-node: the backends a child process of the
   * thread would run (the Node worker guard runs its model there; see NATIVE_IN_WORKER_THREAD_REASON).
   */
  inChildProcess?: OrtBackend[];
}

/** Fallback reasons joined in order (the plan's, then the loader's), or null when there are none. */
export function joinReasons(...reasons: Array<string | null | undefined>): string | null {
  return reasons.filter(Boolean).join('; ') || null;
}

/** The host a plan is for; `gpu` is the browser's `navigator.gpu` (probed only when WebGPU may be used). */
export interface BackendHost {
  isNode: boolean;
  /** Whether this Node code runs in a worker thread rather than the main thread. */
  isWorkerThread?: boolean;
  gpu: { requestAdapter(): Promise<unknown> } | undefined;
}

/**
 * Why a Node worker thread runs onnxruntime-web (wasm) instead of onnxruntime-node: terminating a
 * worker_threads Worker while onnxruntime-node runs (the client's crash recovery, the stuck-call
 * watchdog, abort, dispose, or the app terminating its own Worker) throws a Napi::Error on a torn-down
 * thread and aborts the whole host process (exit 134). Wasm stops with the thread.
 */
export const NATIVE_IN_WORKER_THREAD_REASON =
  'onnxruntime-node: not used inside a worker thread (terminating the worker during a native run would abort the whole process); onnxruntime-web wasm runs instead';

const NODE_BACKENDS: readonly OrtBackend[] = ['node', 'wasm'];

/** Throws InvalidOptionsError for a request this host cannot run; synchronous, so a guard refuses bad options when it is made. */
export function checkBackendRequest(request: unknown, host: Pick<BackendHost, 'isNode'>): BackendRequest {
  if (Array.isArray(request)) {
    if (!host.isNode || request.length === 0 || request.some((b) => !NODE_BACKENDS.includes(b as OrtBackend))) {
      throw new InvalidOptionsError(`Invalid option backends: received ${JSON.stringify(request)}; allowed in Node: a non-empty list of "node", "wasm".`, { option: 'backends', allowed: [...NODE_BACKENDS] });
    }
    return request as OrtBackend[];
  }
  const allowed = host.isNode ? ['auto', 'node', 'wasm'] : ['auto', 'webgpu', 'wasm'];
  if (typeof request !== 'string' || !allowed.includes(request)) {
    throw new InvalidOptionsError(`Invalid option backend: received ${JSON.stringify(request)} in ${host.isNode ? 'Node' : 'a browser'}; allowed here: ${allowed.map((a) => `"${a}"`).join(' | ')}.`, {
      option: 'backend',
      allowed,
    });
  }
  return request as BackendPreference;
}

/** One request from `backend` and its older spelling `backends` (at most one of the two may be given). */
export function backendRequest(options: { backend?: BackendPreference | undefined; backends?: readonly OrtBackend[] | undefined }): BackendRequest {
  if (options.backend !== undefined && options.backends !== undefined) {
    throw new InvalidOptionsError('Invalid options: received both backend and backends; give one (backends is the older spelling of backend).', { option: 'backends' });
  }
  return options.backends ?? options.backend ?? 'auto';
}

/** Why WebGPU cannot be used ('unavailable') or should not be under 'auto' ('software'), or null for a real GPU. */
async function webgpuProblem(gpu: BackendHost['gpu']): Promise<{ kind: 'unavailable' | 'software'; reason: string } | null> {
  if (gpu === undefined || gpu === null) return { kind: 'unavailable', reason: 'navigator.gpu is undefined' };
  let adapter: unknown;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { kind: 'unavailable', reason: `navigator.gpu.requestAdapter() threw: ${(e as Error).message}` };
  }
  if (!adapter) return { kind: 'unavailable', reason: 'navigator.gpu.requestAdapter() returned null' };
  const software = typeof adapter === 'object' ? softwareAdapterReason(adapter as WebGpuAdapterLike) : null;
  return software === null ? null : { kind: 'software', reason: software };
}

/** Turns a backend request into the ordered backends to try on this host, checking WebGPU for a real adapter first. */
export async function planBackends(request: BackendRequest, host: BackendHost): Promise<BackendPlan> {
  const checked = checkBackendRequest(request, host);
  if (host.isNode) {
    const backends: OrtBackend[] = typeof checked === 'string' ? (checked === 'auto' ? [...NODE_BACKENDS] : [checked as OrtBackend]) : [...checked];
    if (host.isWorkerThread === true && backends.includes('node')) return { backends: ['wasm'], fallbackReason: NATIVE_IN_WORKER_THREAD_REASON, inChildProcess: backends };
    return { backends, fallbackReason: null };
  }
  if (checked === 'wasm') return { backends: ['wasm'], fallbackReason: null };
  const problem = await webgpuProblem(host.gpu);
  if (checked === 'webgpu') {
    // An explicit 'webgpu' is honoured on a software adapter: the caller asked for that code path.
    if (problem?.kind === 'unavailable') {
      throw new BackendUnavailableError(`WebGPU was requested but is unavailable: ${problem.reason}.`, { causes: [{ backend: 'webgpu', message: problem.reason }] });
    }
    return { backends: ['webgpu'], fallbackReason: null };
  }
  if (problem === null) return { backends: ['webgpu', 'wasm'], fallbackReason: null };
  const why = problem.kind === 'software' ? `${problem.reason}, which runs on the CPU slower than WASM; pass backend: 'webgpu' to use it anyway` : problem.reason;
  return { backends: ['wasm'], fallbackReason: `WebGPU: ${why}` };
}
