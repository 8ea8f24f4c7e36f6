/**
 * How the guard runs its model, declared once: createGuard, createNodeGuard, the worker's init message
 * and the in-process guard take these same options under the same names.
 */
import { InvalidOptionsError } from './errors.js';
import type { GuardOptions } from './options.js';

/**
 * Backend preference: 'auto' is WebGPU when an adapter exists, else wasm (browser) or onnxruntime-node, else wasm (Node).
 * A Node worker thread always runs wasm (see NATIVE_IN_WORKER_THREAD_REASON in ./backend-plan.ts).
 */
export type BackendPreference = 'auto' | 'webgpu' | 'wasm' | 'node';


/** Model precision variants, by file. */
export type ModelVariant = 'fp32' | 'q4' | 'fp16' | 'q4f16';

/** manifest.json: every file of a model directory with its SHA-256 and size. */
export interface ModelManifest {
  model: string;
  files: Record<string, { sha256: string; size: number }>;
}

/** How the engine runs a check's variants: 'prefix' or 'naive' ({@link ModelRuntimeOptions.scoring}), or 'auto' to pick one by backend. */
export type ScoringMode = 'auto' | 'prefix' | 'naive';

/** Where the remote proxy runs. Structured-cloneable, so it crosses into the worker as is. */
export interface RemoteProxyOptions {
  /** The server's base URL, e.g. `http://gpu-box:8000`; requests go to `<url>/v1/completions`. */
  url: string;
  /** The served model name (vLLM `--served-model-name`). */
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>` (vLLM `--api-key`). */
  apiKey?: string;
  /** Most sequences per request; one guard call's variants usually fit in one. @defaultValue 64 */
  maxSequencesPerRequest?: number;
}

/** How the model runs (everything but where it is and which backend): plain data that crosses to the worker. */
export interface ModelRuntimeOptions {
  /** wasm threads (onnxruntime-web only). */
  wasmThreads?: number;
  /** onnxruntime-web's .wasm location, served by the app itself. */
  wasmPaths?: string | Record<string, string>;
  /** Padded tokens per forward pass of the 'naive' scoring path. @defaultValue 8192 on 'naive'; none on 'auto' */
  maxBatchTokens?: number;
  /**
   * 'prefix': compute each shared token prefix of the variants once and branch from its KV cache
   * (prefix-scorer.ts): the fewest tokens, the right plan on CPUs. 'naive': every variant's full sequence,
   * batched: the fewest passes, which is what a GPU needs (on an H100 through WebGPU the standard
   * 2k-token / 3-span check took 96 ms in one batch against 788 ms on the prefix path; bench/README.md).
   * 'auto': 'naive' on WebGPU, in passes of at most `maxBatchBytes` (estimated), else 'prefix'.
   * @defaultValue 'auto'
   */
  scoring?: ScoringMode;
  /**
   * A Jinja chat template to render guard calls with instead of the model's own (e.g. one that writes
   * tool turns for a model whose template refuses them); implies template rendering. @defaultValue the model's
   */
  chatTemplate?: string;
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

const REMOTE_PROXY_KEYS = ['url', 'model', 'apiKey', 'maxSequencesPerRequest'];

/** Checks remote proxy options; throws InvalidOptionsError naming what was wrong and what is allowed. */
export function validateRemoteProxyOptions(value: unknown): RemoteProxyOptions {
  const bad = (what: string, allowed: string): never => {
    throw new InvalidOptionsError(`Invalid option remoteProxy${what}; allowed: ${allowed}.`, { option: 'remoteProxy' });
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) bad(`: received ${JSON.stringify(value)}`, '{ url, model, apiKey?, maxSequencesPerRequest? }');
  const o = value as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !REMOTE_PROXY_KEYS.includes(k));
  if (unknown.length > 0) bad(`: unknown key(s) ${unknown.map((k) => `"${k}"`).join(', ')}`, REMOTE_PROXY_KEYS.join(', '));
  let url: URL | undefined;
  try {
    url = typeof o['url'] === 'string' ? new URL(o['url']) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) bad(`.url: received ${JSON.stringify(o['url'])}`, 'an absolute http(s) URL such as "http://gpu-box:8000"');
  if (typeof o['model'] !== 'string' || o['model'] === '') bad(`.model: received ${JSON.stringify(o['model'])}`, 'the served model name, a non-empty string');
  if (o['apiKey'] !== undefined && typeof o['apiKey'] !== 'string') bad('.apiKey: received a non-string', 'a string');
  const max = o['maxSequencesPerRequest'];
  if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max >= 1)) bad(`.maxSequencesPerRequest: received ${JSON.stringify(max)}`, 'an integer >= 1');
  return o as unknown as RemoteProxyOptions;
}
