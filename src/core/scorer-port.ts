/**
 * The Scorer port: all the conductor needs from a model. The engines implement it (onnxruntime in
 * this thread or in a worker, a vLLM scoring server); the core never learns which one it talks to.
 */
import type { StructuredContext } from './context.js';
import type { GuardProgress, BackendName } from './guard-api.js';
import type { CheckScores, ScorerCapabilities } from './judge.js';
import type { ModelOptionsFile } from './model-options.js';
import type { ActionTextMode } from './options.js';
import type { Variant } from './variants.js';
import type { ModelShape } from './window-budget.js';

/** What a loaded scorer is and can do (plain data: it goes into the guard's status). */
export interface ScorerInfo extends ScorerCapabilities {
  /** The onnxruntime backend, or 'remote' for a scoring server. */
  backend: BackendName;
  model: string;
  /** The model file variant ('q4', 'fp32', ...), or 'remote'. */
  variant: string;
  /** The longest sequence the model takes. */
  maxContextTokens: number;
  /** UTF-16 code units beyond which no text fits that window whatever its tokens: longer texts are cut before scoring (core/long-texts.ts). */
  maxTextChars: number;
  /** How the variants of a check are scored; null when a scoring server runs them. */
  scoring: 'prefix' | 'naive' | null;
  /** The model's dims, from which the default window is chosen (window-budget.ts); absent for a scoring server, whose window is the model's. */
  shape?: ModelShape;
  /** Why the model computes logits for every position (engine/logits-adapter.ts could not rewrite its LM head); null or absent when only the scored positions' are. */
  logitsUnavailable?: string | null;
  /** How checks are rendered for the model (engine.ts `Rendering`); absent for scorers that do not say. */
  rendering?: string;
}

/** One scoring request: the variants of one check, or sentence ablations of one message (`replacements`). */
export interface ScoreRequest {
  context: StructuredContext;
  variants: readonly Variant[];
  actionText: ActionTextMode;
  withAttention: boolean;
  /** Extra sequences: the full context with one message's text replaced (sentence-level leave-one-out). */
  replacements?: ReadonlyArray<{ id: string; messageIndex: number; content: string }>;
  /** The check's window: at most the model's (the maxContextTokens option); the model's when absent. */
  maxContextTokens?: number;
  /**
   * A context longer than the window: 'truncate' (the default) cuts it to fit and scores; 'measure'
   * scores nothing and answers with `sizes`, the tokens of each part, so the conductor can plan windows.
   */
  ifTooLong?: 'truncate' | 'measure';
  /** Stops the request's model work (the call's deadline or the caller's abort). */
  signal?: AbortSignal;
}

/** A loaded model that scores checks: the port the conductor calls. */
export interface Scorer {
  readonly info: ScorerInfo;
  /**
   * The scorer runs its requests one at a time where it lives, so the conductor sends each at once (a
   * worker that dies then hands every call in flight to the next); otherwise the conductor queues them.
   */
  readonly queuesRequests?: boolean;
  score(request: ScoreRequest): Promise<CheckScores>;
  /**
   * Scores several requests in one run, sharing what their sequences have in common (the calls of one
   * conversation share their context); each request's scores are what `score` gives it. Optional: the
   * conductor scores one request after another on a scorer without it. `signal` stops the whole run.
   */
  scoreMany?(requests: readonly ScoreRequest[], signal?: AbortSignal): Promise<CheckScores[]>;
  dispose(): Promise<void>;
}

/** A scorer once loaded, with the model directory's own operating point. */
export interface LoadedScorer {
  scorer: Scorer;
  /** The model's guard-options.json, or null when it has none. */
  modelOptions: ModelOptionsFile | null;
  /** Why backends the plan preferred could not be loaded (joined to the plan's own reason). */
  fallbackReason?: string | null;
}

/** Where the conductor gets its scorer: a loader the engine provides, and what to report while it loads. */
export interface ScorerSource {
  /** Loads and verifies the model, once; a rejection is the load failure every check needing the model answers with the failure policy. */
  load(): Promise<LoadedScorer>;
  /** Why the backend planner skipped preferred backends (e.g. no WebGPU adapter). */
  fallbackReason?: string | null;
  onProgress?: (event: GuardProgress) => void;
  /** Releases what the source holds even while it loads (a worker): called once, when the guard is disposed. */
  dispose?(): Promise<void>;
}
