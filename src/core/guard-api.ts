/**
 * The guard's public interface, shared by the in-process guard (Node, or inside the worker) and the
 * worker client, so callers cannot tell where inference runs.
 */
import type { DefenseCallbacks, DefenseResult } from './defense.js';
import type { FamiliarityCount } from './familiarity.js';
import type { ModelOptionsStatus } from './model-options.js';
import type { Verdict } from './verdict.js';

/**
 * Inference backend names as reported in statuses and verdicts; 'node-process' is onnxruntime-node in a
 * child process (createNodeGuard's `isolation: 'process'`), 'remote' a scoring server (vLLM).
 */
export type BackendName = 'node' | 'node-process' | 'wasm' | 'webgpu' | 'remote';

/** Where the guard is in its life. */
export type GuardState = 'loading' | 'ready' | 'failed' | 'disposed';

/** What the guard runs on, and why. */
export interface GuardStatus {
  state: GuardState;
  /** The backend in use, once chosen. */
  backend: BackendName | null;
  /** Why a preferred backend was not used (e.g. "WebGPU: navigator.gpu.requestAdapter() returned null"). */
  fallbackReason: string | null;
  model: string | null;
  /** The model file variant in use ('q4', 'fp32', 'fp16', 'q4f16'), or 'remote' for a remote proxy. */
  variant: string | null;
  maxContextTokens: number | null;
  /**
   * The window a check is scored in when the maxContextTokens option is not set: the model's, or less where the
   * memory and time budgets would not allow it (core/window-budget.ts); a longer check is scored in several
   * windows. null before loading.
   */
  windowTokens: number | null;
  /**
   * Why the model computes logits for every position, over its whole vocabulary (a standard export without
   * num_logits_to_keep whose LM head the logits adapter could not rewrite): its passes are sized by them. null
   * when only the scored positions' logits are computed, before loading, and for a remote proxy.
   */
  logitsUnavailable: string | null;
  /** Whether the model exposes attention rows (MindGuard). */
  attention: boolean;
  /**
   * How the variants of a check are scored: 'prefix' (each shared prefix once: fewest tokens, CPUs) or
   * 'naive' (every variant in full, batched: fewest passes, GPUs); null before loading and for a remote proxy.
   */
  scoring: 'prefix' | 'naive' | null;
  /** How checks are rendered for the proxy ('edgearmor', 'model-template', 'custom-template', 'gemma3-tools', ...), once loaded. */
  rendering?: string;
  /**
   * The model directory's own operating point (guard-options.json): which of its values apply and which
   * the caller's options overrode; null before loading and for a model without the file.
   */
  modelOptions: ModelOptionsStatus | null;
  /**
   * How many of this guard's model verdicts predicted their call below the model's familiarityThreshold:
   * most of an agent's checks below it mean an agent the proxy does not know (core/familiarity.ts judges).
   */
  familiarity: FamiliarityCount;
}

/** Model loading progress, as a discriminated union. */
export type GuardProgress =
  | { type: 'file'; file: string; loadedBytes: number; totalBytes: number | null; fromCache: boolean }
  | { type: 'verified'; file: string; bytes: number }
  | { type: 'session'; backend: BackendName }
  | { type: 'ready'; status: GuardStatus };

/** Per-call options. */
export interface CheckOptions {
  /** Cancels the call: it rejects with GuardAbortedError (code 'aborted'). */
  signal?: AbortSignal;
}

/** The caller's side of `defend`: the agent regenerates; the guard sanitises and re-checks. */
export type DefendCallbacks = Omit<DefenseCallbacks, 'check' | 'signal'>;

/** A running guard: check proposed tool calls, defend against flagged ones. */
export interface Guard {
  /** Resolves when the model is loaded and verified; rejects with the typed load error. */
  readonly ready: Promise<GuardStatus>;
  /** The current status. */
  status(): Promise<GuardStatus>;
  /** Checks one proposed call; a detected injection is a verdict, never an exception. */
  check(input: unknown, options?: CheckOptions): Promise<Verdict>;
  /** Checks, and when spans are flagged sanitises them (the local attribution-guided redactor unless a sanitizer is given), regenerates and re-checks. */
  defend(input: unknown, callbacks: DefendCallbacks, options?: CheckOptions): Promise<DefenseResult>;
  /** Releases the model; later calls reject with DisposedError. */
  dispose(): Promise<void>;
}
