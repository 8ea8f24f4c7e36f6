/**
 * Wire types between the worker client and the guard service inside the worker.
 *
 * Everything here crosses `postMessage`, so it is structured-cloneable data. Comlink alone keeps
 * only an error's message, name and stack; so every method that can fail returns a discriminated
 * {@link WireResult} carrying `{name, code, message, details}`, which the client rebuilds into the
 * right EdgeArmorError subclass with `deserializeError`.
 */
import { serializeError, type WireError } from '../core/errors.js';
import type { GuardProgress, GuardStatus } from '../core/guard-api.js';
import type { GuardOptions } from '../core/options.js';
import type { Verdict } from '../core/verdict.js';
import type { BackendPreference, ModelRuntimeOptions } from '../core/runtime-options.js';

export type { WireError } from '../core/errors.js';

/** The outcome of a remote call: a value, or the failure as plain data. */
export type WireResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** Runs `work` and returns its value or its error as a WireResult (nothing thrown crosses the boundary). */
export async function settle<T>(work: () => Promise<T>): Promise<WireResult<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return { ok: false, error: serializeError(error) };
  }
}

export type { BackendPreference } from '../core/runtime-options.js';

/** Where the worker reads the model from: a base URL (browser, fetched and cached) or a directory (Node). */
export type ModelLocation = { baseUrl: string } | { dir: string };

/** What the worker needs to load a guard: the guard's and the runtime's options as the caller gave them, plain data (it is structured-cloned into the worker). */
export interface WorkerInitOptions extends ModelRuntimeOptions {
  /** The guard's options; validated again in the worker with resolveOptions. */
  guard: GuardOptions;
  model: ModelLocation;
  /** @defaultValue 'auto' */
  backend?: BackendPreference;
}

/** The guard service a worker exposes through Comlink. */
export interface GuardWorkerApi {
  /** Loads and verifies the model; `onProgress` (a Comlink proxy) receives events in order and is released when init settles. */
  init(options: WorkerInitOptions, onProgress: (event: GuardProgress) => void): Promise<WireResult<GuardStatus>>;
  /** Checks one call; `requestId` names it for `cancel`. */
  check(requestId: string, input: unknown): Promise<WireResult<Verdict>>;
  /** Aborts the request with this id (a no-op when it already finished). */
  cancel(requestId: string): Promise<void>;
  /** Normalised action log-prob deltas of replacing one message's text by each of `texts` (the local redactor's leave-one-out). */
  scoreSentenceAblations(requestId: string, input: unknown, messageIndex: number, texts: string[]): Promise<WireResult<number[]>>;
  status(): Promise<GuardStatus>;
  /** Releases the model; the client terminates the worker afterwards. */
  dispose(): Promise<void>;
}
