/**
 * What the shells' own options share (where the model is, which backend, load progress), declared once
 * beside the guard's (option-registry.ts) and the runtime's (runtime-options.ts), and the one validation of
 * everything a factory takes. Each shell declares its own group with its code: createGuard's in
 * page/options.ts, createNodeGuard's in node/options.ts; an option both take is one declaration used in both.
 */
import * as v from 'valibot';
import type { GuardProgress } from './guard-api.js';
import { compileOptions, group, nonBlank, oneOf, option, type OptionGroup } from './option-schema.js';
import { invalidOptionsError } from './options.js';
import { GUARD_OPTIONS } from './option-registry.js';
import { RUNTIME_OPTIONS, validateRemoteProxyOptions, type BackendPreference } from './runtime-options.js';

/** A number of milliseconds `least` accepts (finite), or with `orNull` also null, for the shells' timing options. */
export function milliseconds(allowed: string, least: (n: number) => boolean): v.GenericSchema<number>;
export function milliseconds(allowed: string, least: (n: number) => boolean, orNull: true): v.GenericSchema<number | null>;
export function milliseconds(allowed: string, least: (n: number) => boolean, orNull = false): v.GenericSchema<number | null> {
  const schema = v.pipe(v.number(allowed), v.check((n: number) => Number.isFinite(n) && least(n), allowed));
  return orNull ? v.nullable(schema) : schema;
}

/** A function, or an object with a `postMessage` (a worker, or a factory for one; the shell names its type). */
export const workerSource = <T>(allowed: string) => v.custom<T>((x) => typeof x === 'function' || (typeof x === 'object' && x !== null && 'postMessage' in x), allowed);

/** The backend preference of both factories (the planner, core/backend-plan.ts, says what each host allows). */
export const BACKEND_OPTION = option(oneOf<BackendPreference>(['auto', 'webgpu', 'wasm', 'node']), 'auto', {
  summary: '`auto`: WebGPU on a hardware GPU, else wasm (browser); onnxruntime-node, else wasm (Node)',
});
/** A model directory on disk. */
export const MODEL_DIR_OPTION = option(nonBlank('a directory path'), null, {
  summary: 'a model directory with a manifest.json (Node; with remoteProxy, the tokenizer and config only; the CLI: `--model`)',
  defaultText: 'the embedded model',
});
/** Where model files are fetched from. */
export const MODEL_URL_OPTION = option(nonBlank('a URL'), null, {
  summary: "the model directory's URL: served by the app (browser; relative to the page), or fetched at load time and cached (Node)",
  defaultText: '`models/edgearmor-proxy/` (browser)',
});
/** Load progress events. */
export const ON_PROGRESS_OPTION = option(
  v.custom<(event: GuardProgress) => void>((x) => typeof x === 'function', 'a function'),
  null,
  { summary: 'load progress: `{type: file | verified | session | ready, ...}`, again on every worker restart', defaultText: 'none' },
);

/** The grace both scorer hosts get: a worker, and createNodeGuard's scoring process, share one cancel rule (wire/scorer-client.ts). */
export const DEFAULT_STUCK_GRACE_MS = 2_000;

/** How long a host may take to stop a cancelled check before it is killed and replaced. */
export const STUCK_GRACE_OPTION = option(milliseconds('a finite number of milliseconds >= 0', (n) => n >= 0), DEFAULT_STUCK_GRACE_MS, {
  summary:
    "how long a timed-out or aborted check may take to stop before its worker (createGuard) or scoring process (createNodeGuard's `isolation: 'process'`) is killed and replaced (a worker's other calls go to the new one)",
});

const compiled = new WeakMap<OptionGroup, ReturnType<typeof compileOptions>>();

/**
 * Validates everything a factory takes (the guard's options, the runtime's and the shell's own, `shell`)
 * in one pass, so every problem is reported at once and an unknown option is named with all the options
 * that factory knows.
 */
export function validateFactoryOptions(shell: OptionGroup, options: Record<string, unknown>): void {
  if (options['remoteProxy'] !== undefined) validateRemoteProxyOptions(options['remoteProxy']);
  let validator = compiled.get(shell);
  if (validator === undefined) {
    const all = group({ ...GUARD_OPTIONS.entries, ...RUNTIME_OPTIONS.entries, ...shell.entries }, shell.summary, GUARD_OPTIONS.rules);
    compiled.set(shell, (validator = compileOptions(all)));
  }
  const result = validator.parse(options);
  if (!result.ok) throw invalidOptionsError(result.issues);
}
