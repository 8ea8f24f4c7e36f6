/**
 * The scorer protocol: what crosses between a conductor and a scorer hosted elsewhere (a Web Worker, a
 * Node worker thread, a child process). Only load, score, cancel, ping and dispose go one way, and
 * progress, the loaded scorer's info, scores and typed errors come back; validation, planning, the
 * deadline, the failure policy and judging stay with the conductor. Everything here is structured-clone
 * data; an error crosses as `{name, code, message, details}` and is rebuilt into its class by
 * `deserializeError`.
 */
import { serializeError, type WireError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { CheckScores } from '../core/judge.js';
import type { ModelOptionsFile } from '../core/model-options.js';
import type { BackendPreference, ModelManifest, ModelRuntimeOptions } from '../core/runtime-options.js';
import type { ScoreRequest, ScorerInfo } from '../core/scorer-port.js';

export type { WireError } from '../core/errors.js';

export type { BackendPreference } from '../core/runtime-options.js';

/** Where a worker reads the model from: a base URL (browser, fetched and cached) or a directory (Node). */
export type ModelLocation = { baseUrl: string } | { dir: string };

/** What the worker needs to load its scorer: plain data, valid when createGuard made it. */
export interface WorkerLoad {
  model: ModelLocation;
  /** The runtime options as the caller gave them (validated on the page). */
  runtime: Omit<ModelRuntimeOptions, 'modelManifest'>;
  modelManifest?: ModelManifest;
  backend: BackendPreference;
}

/** The outcome of a call whose failure must cross as data (a page evaluated by a test harness): a value, or the typed error. */
export type WireResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** Runs `work` and returns its value or its error as a WireResult (nothing thrown crosses the boundary). */
export async function settle<T>(work: () => Promise<T>): Promise<WireResult<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return { ok: false, error: serializeError(error) };
  }
}

/** A score request as it crosses: the port's request without its signal (a `cancel` message stops it). */
export type WireScoreRequest = Omit<ScoreRequest, 'signal'>;

/** What the conductor's side sends the scorer host; `L` is what the host needs to load its model. */
export type ScorerCall<L> =
  | { type: 'load'; load: L }
  | { type: 'score'; id: number; request: WireScoreRequest }
  | { type: 'cancel'; id: number }
  | { type: 'ping'; id: number }
  | { type: 'dispose' };

/** What the scorer host answers, in the order it happened (progress before `loaded`). */
export type ScorerReply =
  | { type: 'progress'; event: GuardProgress }
  | { type: 'loaded'; info: ScorerInfo; modelOptions: ModelOptionsFile | null; fallbackReason: string | null }
  | { type: 'load-failed'; error: WireError }
  | { type: 'scored'; id: number; scores: CheckScores }
  | { type: 'failed'; id: number; error: WireError }
  | { type: 'pong'; id: number }
  | { type: 'disposed' };

/** The buffers of a reply's log-probs and attention rows, moved instead of copied (each once, and only when a view owns all of its buffer). */
export function transferables(reply: ScorerReply): ArrayBuffer[] {
  if (reply.type !== 'scored') return [];
  const buffers = new Set<ArrayBuffer>();
  const views: unknown[] = [...reply.scores.logProbs.values(), reply.scores.attention?.data];
  for (const view of views) {
    if (!ArrayBuffer.isView(view) || !(view.buffer instanceof ArrayBuffer)) continue;
    if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength) buffers.add(view.buffer);
  }
  return [...buffers];
}
