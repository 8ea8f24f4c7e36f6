/**
 * How the guard runs its model, declared once: createGuard, createNodeGuard, the worker's init message
 * and the in-process guard take these same options under the same names.
 */
import * as v from 'valibot';
import { InvalidOptionsError } from './errors.js';
import { isPlainObject } from './json.js';
import { compileOptions, group, integerFrom, nonBlank, oneOf, option, type OptionsInput } from './option-schema.js';
import { invalidOptionsError, type GuardOptions } from './options.js';

/**
 * Backend preference: 'auto' is WebGPU when an adapter exists, else wasm (browser) or onnxruntime-node, else wasm (Node).
 * A Node worker thread always runs wasm (see NATIVE_IN_WORKER_THREAD_REASON in ./backend-plan.ts).
 */
export type BackendPreference = 'auto' | 'webgpu' | 'wasm' | 'node';


/** Model precision variants, by file. */
export type ModelVariant = NonNullable<ModelRuntimeOptions['modelVariant']>;

/** manifest.json: every file of a model directory with its SHA-256 and size. */
export interface ModelManifest {
  model: string;
  files: Record<string, { sha256: string; size: number }>;
  /** Where the files came from, for a model fetched with `edgearmor pull`; loading never reads it. */
  hub?: HubSource;
}

/** A pulled model's origin: the hub repository, the revision asked for and the commit it resolved to (what the files are pinned to). */
export interface HubSource {
  repo: string;
  revision: string;
  commit: string;
  /** The hub's base URL (HF_ENDPOINT), without credentials. */
  endpoint: string;
}

/** How the engine runs a check's variants: 'prefix' or 'naive', or 'auto' to pick one by backend (RUNTIME_OPTIONS.scoring). */
export type ScoringMode = NonNullable<ModelRuntimeOptions['scoring']>;

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


/**
 * How the model runs (everything but where it is): plain data that crosses to the worker, declared once.
 * createGuard, createNodeGuard and the worker's init message take these options under these names; the
 * CLI's flags, the EDGEARMOR_* variables and docs/options.md's table are made from the same list.
 */
export const RUNTIME_OPTIONS = group(
  {
    modelVariant: option(oneOf(['q4', 'fp32', 'fp16', 'q4f16']), 'q4', {
      summary: "the precision variant of the model files (the embedded model ships q4 and fp32; the CLI: `--variant`); an onnxruntime-genai directory holds one build, whose variant is read from its graph instead",
    }),
    scoring: option(oneOf(['auto', 'prefix', 'naive']), 'auto', {
      summary:
        "`prefix` computes each shared token prefix of the variants once (fewest tokens: CPUs); `naive` batches every variant's full sequence (fewest passes: GPUs); `auto` is `naive` on WebGPU, else `prefix`",
    }),
    maxBatchTokens: option(integerFrom(1), null, {
      summary: "padded tokens per forward pass of the `naive` path",
      defaultText: "8192 on `naive`; none on `auto`",
    }),
    wasmThreads: option(integerFrom(1), null, { summary: 'threads of onnxruntime-web wasm', defaultText: "onnxruntime-web's" }),
    wasmPaths: option(
      v.custom<string | Record<string, string>>(
        (x) => (typeof x === 'string' && x !== '') || (isPlainObject(x) && Object.values(x).every((p) => typeof p === 'string')),
        'a URL prefix, or an object of file name to URL',
      ),
      null,
      { summary: "where onnxruntime-web's .wasm files are served from (browser builds: the app's own copy)", defaultText: 'next to the worker' },
    ),
    chatTemplate: option(nonBlank('a Jinja chat template string'), null, {
      summary: "a Jinja chat template to render guard calls with instead of the model's own; implies template rendering (the CLI: `--chat-template <file>`)",
      defaultText: "the model's",
    }),
    modelManifest: option(
      v.custom<ModelManifest>((x) => isPlainObject(x) && typeof x['model'] === 'string' && isPlainObject(x['files']), '{ model, files: { <path>: { sha256, size } } }'),
      null,
      { summary: "the manifest the model's files must match, where their location has none (a hub model's resolve URL)", defaultText: "the location's manifest.json" },
    ),
    remoteProxy: option(
      v.custom<RemoteProxyOptions>((x) => remoteProxyProblem(x) === null, '{ url, model, apiKey?, maxSequencesPerRequest? }'),
      null,
      {
        summary: 'score on a vLLM (OpenAI-compatible completions) server instead of on this device: the only option that makes the guard use the network (the CLI: `--remote-proxy`, `--remote-model`)',
        defaultText: 'none (on this device)',
      },
    ),
  },
  'how the model runs',
);

/** How the model runs, as callers give it (every option optional; what each means: RUNTIME_OPTIONS). */
export type ModelRuntimeOptions = OptionsInput<typeof RUNTIME_OPTIONS>;

/** The names of {@link ModelRuntimeOptions}, in one list. */
export const MODEL_RUNTIME_OPTION_KEYS = Object.freeze(Object.keys(RUNTIME_OPTIONS.entries) as Array<keyof ModelRuntimeOptions>);

const compiledRuntime = compileOptions(RUNTIME_OPTIONS);

/**
 * Validates the runtime options given (every problem reported at once, as for the guard's options) and
 * returns them as given: an option left out stays out, so each engine applies its own default.
 */
export function validateRuntimeOptions(runtime: Record<string, unknown>): ModelRuntimeOptions {
  // The remote proxy's problems are worth their own sentence (which field, and what it takes).
  if (runtime['remoteProxy'] !== undefined) validateRemoteProxyOptions(runtime['remoteProxy']);
  const result = compiledRuntime.parse(runtime);
  if (!result.ok) throw invalidOptionsError(result.issues);
  return runtime as ModelRuntimeOptions;
}

/** Splits a caller's options into the guard's options and the (validated) runtime options, leaving out `ownKeys` (the shell's own) and undefined values. */
export function splitRuntimeOptions<O extends GuardOptions & ModelRuntimeOptions>(options: O, ownKeys: readonly (keyof O)[]): { guard: GuardOptions; runtime: ModelRuntimeOptions } {
  const guard: Record<string, unknown> = {};
  const runtime: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if ((ownKeys as readonly string[]).includes(key)) continue;
    if ((MODEL_RUNTIME_OPTION_KEYS as readonly string[]).includes(key)) {
      if (value !== undefined) runtime[key] = value;
    } else {
      guard[key] = value;
    }
  }
  return { guard: guard as GuardOptions, runtime: validateRuntimeOptions(runtime) };
}

const REMOTE_PROXY_KEYS = ['url', 'model', 'apiKey', 'maxSequencesPerRequest'];

/** What is wrong with remote proxy options, as `[where, allowed]`, or null when nothing is. */
function remoteProxyProblem(value: unknown): [string, string] | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`: received ${JSON.stringify(value)}`, '{ url, model, apiKey?, maxSequencesPerRequest? }'];
  const o = value as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !REMOTE_PROXY_KEYS.includes(k));
  if (unknown.length > 0) return [`: unknown key(s) ${unknown.map((k) => `"${k}"`).join(', ')}`, REMOTE_PROXY_KEYS.join(', ')];
  let url: URL | undefined;
  try {
    url = typeof o['url'] === 'string' ? new URL(o['url']) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return [`.url: received ${JSON.stringify(o['url'])}`, 'an absolute http(s) URL such as "http://gpu-box:8000"'];
  if (typeof o['model'] !== 'string' || o['model'] === '') return [`.model: received ${JSON.stringify(o['model'])}`, 'the served model name, a non-empty string'];
  if (o['apiKey'] !== undefined && typeof o['apiKey'] !== 'string') return ['.apiKey: received a non-string', 'a string'];
  const max = o['maxSequencesPerRequest'];
  if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max >= 1)) return [`.maxSequencesPerRequest: received ${JSON.stringify(max)}`, 'an integer >= 1'];
  return null;
}

/** Checks remote proxy options; throws InvalidOptionsError naming what was wrong and what is allowed. */
export function validateRemoteProxyOptions(value: unknown): RemoteProxyOptions {
  const problem = remoteProxyProblem(value);
  if (problem !== null) throw new InvalidOptionsError(`Invalid option remoteProxy${problem[0]}; allowed: ${problem[1]}.`, { option: 'remoteProxy' });
  return value as RemoteProxyOptions;
}
