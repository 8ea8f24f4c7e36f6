/**
 * How the guard runs its model, declared once: createGuard, createNodeGuard, the worker's init message
 * and the in-process guard take these same options under the same names.
 */
import type { GuardOptions } from '../core/options.js';
import type { EngineOptions } from './engine.js';
import type { ModelManifest, ModelVariant } from './model-files.js';
import { validateRemoteProxyOptions, type RemoteProxyOptions } from './remote-proxy.js';

/**
 * Backend preference: 'auto' is WebGPU when an adapter exists, else wasm (browser) or onnxruntime-node, else wasm (Node).
 * A Node worker thread always runs wasm (see NATIVE_IN_WORKER_THREAD_REASON in src/client/worker-service.ts).
 */
export type BackendPreference = 'auto' | 'webgpu' | 'wasm' | 'node';

/** How the model runs (everything but where it is and which backend): plain data that crosses to the worker. */
export interface ModelRuntimeOptions extends Pick<EngineOptions, 'wasmThreads' | 'wasmPaths' | 'maxBatchTokens' | 'scoring' | 'chatTemplate'> {
  /** The precision variant of the model's weights. @defaultValue 'q4' */
  modelVariant?: ModelVariant;
  /** The manifest the model's files must match, when their location has none (e.g. a hub model's resolve URL). */
  modelManifest?: ModelManifest;
  /**
   * Score on a vLLM (OpenAI-compatible completions) server instead of on this device. Opt-in: the only
   * option that makes the guard use the network; the model location then supplies only the tokenizer and
   * config (a page needs the server to allow its origin: vLLM `--allowed-origins`). @defaultValue undefined
   */
  remoteProxy?: RemoteProxyOptions;
}

/** The names of {@link ModelRuntimeOptions}, in one list. */
export const MODEL_RUNTIME_OPTION_KEYS = Object.freeze([
  'modelVariant',
  'modelManifest',
  'remoteProxy',
  'wasmThreads',
  'wasmPaths',
  'maxBatchTokens',
  'scoring',
  'chatTemplate',
] as const satisfies ReadonlyArray<keyof ModelRuntimeOptions>);

/** Splits a caller's options into the guard's options and the runtime options, leaving out `ownKeys` (the shell's own) and undefined values; remoteProxy is validated here. */
export function splitRuntimeOptions<O extends GuardOptions & ModelRuntimeOptions>(options: O, ownKeys: readonly (keyof O)[]): { guard: GuardOptions; runtime: ModelRuntimeOptions } {
  const guard: Record<string, unknown> = {};
  const runtime: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if ((ownKeys as readonly string[]).includes(key)) continue;
    if ((MODEL_RUNTIME_OPTION_KEYS as readonly string[]).includes(key)) {
      if (value !== undefined) runtime[key] = key === 'remoteProxy' ? validateRemoteProxyOptions(value as RemoteProxyOptions) : value;
    } else {
      guard[key] = value;
    }
  }
  return { guard: guard as GuardOptions, runtime: runtime as ModelRuntimeOptions };
}
