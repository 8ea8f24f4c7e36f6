/**
 * The proxy engine: turns a structured context and its ablation variants into action-token
 * log-probs (and attention rows for the full context) with one batched run of the model.
 */
import { BackendUnavailableError, IntegrityError, InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { maxFittingChars } from '../core/long-texts.js';
import { validateRuntimeOptions, type ModelRuntimeOptions, type ScoringMode } from '../core/runtime-options.js';
import type { Scorer, ScoreRequest } from '../core/scorer-port.js';
import type { BackendName } from '../core/guard-api.js';
import type { ContextSizes } from '../core/windows.js';
import type { ModelShape } from '../core/window-budget.js';
import { encodeSegmentedCall, type ActionLayout, type ContextLayout, type TruncationReport } from './call-encoding.js';
import { scoreRequest, scoreRequests } from './score-requests.js';
import { encodeTemplateCall } from './template-format.js';
import { chatFormatOf, proxyTokenizerFor, type ChatFormat, type Rendering } from './rendering.js';
import { dimsFromConfig, padTokenIdOf } from './model-config.js';
import { exposeAttentionCached, type AttentionAdaptation } from './attention-adapter.js';
import { KEEP_INPUT, keepLogits, type LogitsAdaptation } from './logits-adapter.js';
import { graphConstraints, inspectGraphCached, type GraphConstraints, type GraphKind } from './graph-kind.js';
import { isFloat16Variant, type ModelFiles } from './model-files.js';
import { createOrtSession, type Backend, type OrtSession } from './ort-session.js';
import { checkPositiveIntegerOption, DEFAULT_MAX_CHUNK_TOKENS, scoreSequencesShared } from './prefix-scorer.js';
import { DEFAULT_MAX_BATCH_TOKENS, FULL_LOGITS_BUDGET_BYTES, presentOutputNames, scoreSequences, totalTokens, type ActionAttention, type ModelDims, type ScoreResult, type ScoreSequence } from './scorer.js';
import type { ProxyTokenizer } from './tokenizer.js';
import { longestTokenChars } from './bounded-text.js';

export type { ActionLayout, ContextLayout, TruncationReport } from './call-encoding.js';
export type { ScoringMode } from '../core/runtime-options.js';
export type { GraphKind } from './graph-kind.js';
export type { ScoreRequest } from '../core/scorer-port.js';

/** Options for {@link createEngine}: the runtime options that concern the engine, and the backend it runs on. */
export interface EngineOptions extends Pick<ModelRuntimeOptions, 'wasmThreads' | 'wasmPaths' | 'maxBatchTokens' | 'scoring' | 'chatTemplate'> {
  backend: Backend;
  /**
   * Estimated peak bytes per forward pass (KV, attention, activations, logits): the prefix path's budget,
   * and on WebGPU under 'auto' the naive path's. @defaultValue on the prefix path 64 MiB, or more for a check
   * that cannot be held to 64 MiB (prefix-scorer.ts `defaultBatchBytes`); 1 GiB on WebGPU
   */
  maxBatchBytes?: number;
  /**
   * Expose the attention rows of standard decoder exports and, on node and wasm, of GroupQueryAttention
   * graphs (attention-adapter.ts, gqa-attention.ts) so MindGuard works on them; models with EdgeArmor's
   * export have them already. @defaultValue true
   */
  exposeAttention?: boolean;
  /**
   * Give standard decoder exports a `num_logits_to_keep` input (logits-adapter.ts), so the LM head runs on
   * the scored positions only; models with EdgeArmor's export have it already. @defaultValue true
   */
  limitLogits?: boolean;
}

/** The plan a scoring mode resolves to on a backend, with its per-pass budgets. */
export type ScoringPlan =
  | { scoring: 'prefix'; maxBatchBytes: number | undefined }
  | { scoring: 'naive'; maxBatchTokens: number | undefined; maxBatchBytes: number | undefined };

/** The estimated bytes a WebGPU pass may take under 'auto': every variant of a 2k-token / 3-span check (~165 MB each) in one pass. */
export const WEBGPU_MAX_BATCH_BYTES = 1024 * 1024 * 1024;

/**
 * What `scoring` means on `backend`. A GPU pays a fixed cost per forward pass, so it gets the fewest passes
 * (every variant, batched under a byte budget); a CPU pays per token, so it gets the fewest tokens.
 * Throws InvalidOptionsError naming an option the engine cannot run.
 */
export function scoringPlan(backend: Backend, options: Pick<EngineOptions, 'scoring' | 'maxBatchTokens' | 'maxBatchBytes'>): ScoringPlan {
  checkScoringOptions(options);
  const mode = options.scoring ?? 'auto';
  if (mode === 'naive') return { scoring: 'naive', maxBatchTokens: options.maxBatchTokens ?? DEFAULT_MAX_BATCH_TOKENS, maxBatchBytes: options.maxBatchBytes };
  if (mode === 'auto' && backend === 'webgpu') {
    return { scoring: 'naive', maxBatchTokens: options.maxBatchTokens, maxBatchBytes: options.maxBatchBytes ?? WEBGPU_MAX_BATCH_BYTES };
  }
  return { scoring: 'prefix', maxBatchBytes: options.maxBatchBytes };
}

/** What the engine knows about itself. */
export interface EngineInfo {
  model: string;
  /** The onnxruntime backend, or 'remote' for a scoring server. */
  backend: BackendName;
  variant: string;
  /** The longest sequence the model takes (config.json max_position_embeddings). */
  maxContextTokens: number;
  /** UTF-16 code units beyond which no text fits `maxContextTokens` whatever its tokens (from the tokenizer's longest token). */
  maxTextChars: number;
  /** Whether the model exposes attention rows (EdgeArmor's export extension, or the attention adapter). */
  attention: boolean;
  /** Where the attention rows come from: EdgeArmor's export, or the adapter over a standard export. */
  attentionSource: 'export' | 'adapter' | null;
  /** Why a model without attention rows has none (e.g. fused attention kernels). */
  attentionUnavailable: string | null;
  /** Where `num_logits_to_keep` comes from: EdgeArmor's export, or the logits adapter over a standard export; null when every position's logits are computed. */
  logitsSource: 'export' | 'adapter' | null;
  /** Why every position's logits are computed (no num_logits_to_keep and no LM head the adapter could rewrite); null when only the scored ones are. */
  logitsUnavailable: string | null;
  /** How guard calls are rendered: EdgeArmor's chat format, or the model's (or the caller's) chat template. */
  chatFormat: ChatFormat;
  /** The model's dims, from which the conductor chooses the default window (core/window-budget.ts); absent for a scoring server. */
  shape?: ModelShape;
  /** Which rendering: EdgeArmor's format, the model's own template, the caller's (`chatTemplate`), or a shipped family rendering. */
  rendering: Rendering;
  /** The plan variants are scored with ({@link scoringPlan}); null when a scoring server runs them. */
  scoring: ScoringPlan['scoring'] | null;
  /** The decoder layout the plan follows (graph-kind.ts); absent when a scoring server runs the model. */
  graph?: GraphKind;
}

/** Scores of one guard call. */
export interface EngineScores {
  /** Per variant id, the log-prob of each action token. */
  logProbs: Map<string, Float64Array>;
  /** Part labels and value rows of the action tokens (template mode only). */
  actionLayout: ActionLayout | undefined;
  actionTokenIds: number[];
  /** Attention rows of the full variant's action tokens, when asked and available. */
  attention?: ActionAttention;
  /** Where each component sits in the full variant's sequence. */
  layout: ContextLayout;
  /** What the truncation policy had to do to fit the model's window. */
  truncation: TruncationReport;
  /** Tokens fed to the model in this call, summed over variants. */
  computedTokens: number;
  /** The parts' tokens, when the request asked to measure a context too long for its window (nothing was scored). */
  sizes?: ContextSizes;
}

/** A loaded proxy model that scores guard calls: the core's Scorer port, with its tokenizer and a raw-sequence scorer for baselines. */
export interface ProxyEngine extends Scorer {
  readonly info: EngineInfo;
  readonly tokenizer: ProxyTokenizer;
  score(request: ScoreRequest): Promise<EngineScores>;
  /** Scores several requests in one run of the model (one prefix trie over all their sequences); each gets what `score` gives it. */
  scoreMany(requests: readonly ScoreRequest[], signal?: AbortSignal): Promise<EngineScores[]>;
  /** Scores raw token sequences (context ids, then action ids) as given: for baselines that build their own prompts. */
  scoreTokens(sequences: readonly ScoreSequence[], signal?: AbortSignal): Promise<ScoreResult[]>;
  /**
   * Every position's log-prob of token-id prompts, as a vLLM server's prompt log-probs (`serve-proxy`): entry j of a
   * result is log P(prompt[j + 1] | prompt[..j + 1]), with the greedy next token when asked. Logits memory per pass
   * is bounded whatever the vocabulary: see {@link scorePrompts}.
   */
  scorePrompts(prompts: ReadonlyArray<readonly number[]>, options?: { withNextToken?: boolean; signal?: AbortSignal }): Promise<ScoreResult[]>;
  dispose(): Promise<void>;
}

/**
 * Runs token sequences through the model, wherever it is (an onnxruntime session here, a scoring
 * server for remote proxies); results come back in input order.
 */
export type SequenceRunner = (
  sequences: readonly ScoreSequence[],
  signal: AbortSignal | undefined,
) => Promise<{ results: ScoreResult[]; computedTokens: number }>;

/** The parts a proxy engine is made of; {@link createEngine} and the remote proxy build one each. */
export interface EngineParts {
  info: Omit<EngineInfo, 'chatFormat' | 'maxTextChars' | 'rendering'>;
  tokenizer: ProxyTokenizer;
  /** @defaultValue chatFormatOf(tokenizer) */
  format?: ChatFormat;
  /** @defaultValue 'edgearmor' for EdgeArmor's format, else 'model-template' */
  rendering?: Rendering;
  /** Scores the variants of guard calls. */
  run: SequenceRunner;
  /** Scores raw sequences as given (baselines); defaults to `run`. */
  runTokens?: SequenceRunner;
  dispose(): Promise<void>;
}

/** `scoring` and the batch budgets arrive from pages and workers untyped: refuse what the engine cannot run (the registry's declarations, and the engine's own byte budget). */
function checkScoringOptions(options: Pick<EngineOptions, 'scoring' | 'maxBatchTokens' | 'maxBatchBytes'>): void {
  const { scoring, maxBatchTokens } = options;
  validateRuntimeOptions({ ...(scoring !== undefined ? { scoring } : {}), ...(maxBatchTokens !== undefined ? { maxBatchTokens } : {}) });
  checkPositiveIntegerOption('maxBatchBytes', options.maxBatchBytes);
}

/** Wraps a sequence runner with the rendering, truncation and ablation of guard calls. */
export function engineFromParts(parts: EngineParts): ProxyEngine {
  const runTokens = parts.runTokens ?? parts.run;
  const chatFormat = parts.format ?? chatFormatOf(parts.tokenizer);
  const rendering = parts.rendering ?? (chatFormat === 'edgearmor' ? 'edgearmor' : 'model-template');
  const encode: typeof encodeSegmentedCall =
    chatFormat === 'edgearmor' ? encodeSegmentedCall : (tokenizer, context, actionText, budget) => encodeTemplateCall(tokenizer, context, actionText, budget, rendering);
  const info: EngineInfo = { ...parts.info, chatFormat, rendering, maxTextChars: maxFittingChars(parts.info.maxContextTokens, longestTokenChars(parts.tokenizer)) };
  return {
    info,
    tokenizer: parts.tokenizer,
    score: (request) => scoreRequest(parts.tokenizer, info, parts.run, encode, request),
    scoreMany: (requests, signal) => scoreRequests(parts.tokenizer, info, parts.run, encode, requests, signal),
    scoreTokens: async (sequences, signal) => (await runTokens(sequences, signal)).results,
    scorePrompts: (prompts, options = {}) => scorePrompts(parts.run, parts.tokenizer.vocabSize, prompts, options),
    dispose: () => parts.dispose(),
  };
}

/** Bytes a logits entry costs in a pass: its float32, and the float64 of the log-softmax beside it (estimateForwardBytes). */
const LOGIT_ENTRY_BYTES = 12;

/**
 * Prompt log-probs in chunks of positions whose logits rows fit FULL_LOGITS_BUDGET_BYTES: a prompt scored whole keeps
 * a row per position, 5k positions of a 262k vocabulary being 15 GB. Each chunk is a sequence continuing the
 * prompt's earlier tokens, so the guard's plan runs them: on the prefix path every chunk starts from the previous
 * one's cache and prompts that share a prefix (a call's variants) compute it once.
 */
async function scorePrompts(
  run: SequenceRunner,
  vocabSize: number,
  prompts: ReadonlyArray<readonly number[]>,
  options: { withNextToken?: boolean; signal?: AbortSignal },
): Promise<ScoreResult[]> {
  const chunk = Math.max(1, Math.min(DEFAULT_MAX_CHUNK_TOKENS - 1, Math.floor(FULL_LOGITS_BUDGET_BYTES / (vocabSize * LOGIT_ENTRY_BYTES))));
  const next = options.withNextToken === true;
  const sequences: ScoreSequence[] = [];
  const ranges = prompts.map((p) => {
    const first = sequences.length;
    if (p.length === 1 && next) sequences.push({ context: [...p], action: [], withNextToken: true });
    for (let a = 1; a < p.length; a += chunk) {
      const b = Math.min(p.length, a + chunk);
      sequences.push({ context: p.slice(0, a), action: p.slice(a, b), ...(b === p.length && next ? { withNextToken: true } : {}) });
    }
    return { first, end: sequences.length };
  });
  const { results } = await run(sequences, options.signal);
  return ranges.map(({ first, end }) => {
    const parts = results.slice(first, end);
    const tokenLogProbs = new Float64Array(parts.reduce((n, r) => n + r.tokenLogProbs.length, 0));
    let at = 0;
    for (const r of parts) {
      tokenLogProbs.set(r.tokenLogProbs, at);
      at += r.tokenLogProbs.length;
    }
    const nextToken = parts.at(-1)?.nextToken;
    return { tokenLogProbs, ...(nextToken ? { nextToken } : {}) };
  });
}

/** Loads a model's verified files into an engine on the chosen backend. */
export async function createEngine(files: ModelFiles, options: EngineOptions): Promise<ProxyEngine> {
  const plan = scoringPlan(options.backend, options);
  // Raw sequences (baselines, the protocol server) run as given, on the naive path.
  const rawPlan = scoringPlan(options.backend, { ...options, scoring: 'naive' });
  const { tokenizer, format, rendering } = proxyTokenizerFor(files, options.chatTemplate);
  const dims = dimsFromConfig(files.config, padTokenIdOf(files.config, tokenizer));
  const sha256 = files.manifest.files[files.onnxPath]?.sha256 ?? '';
  // Before any session: a fused layout the engine cannot score exactly is refused here, naming the op.
  const graph = inspectGraphCached(files.onnx, sha256, dims);
  const constraints = graphConstraints(graph.kind);
  const open = async (model: Uint8Array): Promise<OrtSession> => {
    try {
      return await createOrtSession(model, {
        backend: options.backend,
        externalData: files.externalData,
        ...(options.wasmThreads !== undefined ? { wasmThreads: options.wasmThreads } : {}),
        ...(options.wasmPaths !== undefined ? { wasmPaths: options.wasmPaths } : {}),
        gpuBufferOutputs: presentOutputNames(dims),
      });
    } catch (e) {
      // A model file that changed after it was verified is not a backend's failure: no other backend may read it.
      if (e instanceof IntegrityError) throw e;
      // A runtime that is not installed is not the model's failure either: its error says what to install.
      if (e instanceof BackendUnavailableError) throw e;
      throw new ModelLoadError(`could not create an onnxruntime session on backend "${options.backend}": ${(e as Error).message}`, {
        backend: options.backend,
      });
    }
  };
  const logits: LogitsAdaptation = options.limitLogits === false ? { ok: false, reason: 'the logits adapter is turned off (limitLogits: false)' } : keepLogits(files.onnx);
  let logitsUnavailable = logits.ok || logits.native ? null : logits.reason;
  const base = logits.ok ? logits.model : files.onnx;
  let attentionUnavailable: string | null = null;
  let session: OrtSession | undefined;
  let source: EngineInfo['attentionSource'] = null;
  const adaptation: AttentionAdaptation =
    options.exposeAttention === false
      ? { ok: false, reason: 'the attention adapter is turned off (exposeAttention: false)' }
      : constraints.contiguousRows && options.backend === 'webgpu'
        ? { ok: false, reason: "GroupQueryAttention's softmax output (qk_output) is read on onnxruntime's CPU kernel (backends node and wasm), not on WebGPU" }
        : exposeAttentionCached(base, logits.ok ? `${sha256}:logits` : sha256, dims.numLayers, { groupQueryAttention: true });
  if (adaptation.ok) {
    try {
      session = await open(adaptation.model);
      source = 'adapter';
    } catch (e) {
      if (e instanceof IntegrityError) throw e;
      attentionUnavailable = `the attention adapter's graph did not load (${(e as Error).message})`;
    }
  } else if (!adaptation.native) {
    attentionUnavailable = adaptation.reason;
  }
  if (!session && logits.ok) {
    try {
      session = await open(base);
    } catch (e) {
      logitsUnavailable = `the logits adapter's graph did not load (${(e as Error).message})`;
    }
  }
  session ??= await open(files.onnx);
  const attention = session.outputNames.some((n) => n.startsWith('attentions.'));
  if (attention && source === null) source = 'export';
  if (isFloat16Variant(files.variant)) dims.kvType = 'float16';
  dims.fullLogits = !session.inputNames.includes(KEEP_INPUT);
  const logitsSource: EngineInfo['logitsSource'] = dims.fullLogits ? null : logits.ok ? 'adapter' : 'export';
  const info: EngineParts['info'] = {
    model: files.manifest.model,
    backend: options.backend,
    variant: files.variant,
    maxContextTokens: dims.maxPositions,
    attention,
    attentionSource: attention ? source : null,
    attentionUnavailable: attention ? null : attentionUnavailable,
    logitsSource,
    logitsUnavailable: dims.fullLogits ? (logitsUnavailable ?? 'the model returns logits for every position') : null,
    scoring: plan.scoring,
    shape: {
      layers: dims.numLayers,
      heads: dims.numHeads,
      kvHeads: dims.numKeyValueHeads,
      headDim: dims.headDim,
      hidden: dims.hiddenSize ?? dims.numHeads * dims.headDim,
      intermediate: dims.intermediateSize ?? 4 * (dims.hiddenSize ?? dims.numHeads * dims.headDim),
      kvElementBytes: dims.kvType === 'float16' ? 2 : 4,
      maxPositions: dims.maxPositions,
    },
    graph: graph.kind,
  };
  return engineFromParts({
    info,
    tokenizer,
    format,
    rendering,
    run: (sequences, signal) => runSequences(session, dims, sequences, plan, constraints, signal),
    runTokens: (sequences, signal) => runSequences(session, dims, sequences, rawPlan, constraints, signal),
    dispose: () => session.release(),
  });
}

async function runSequences(
  session: OrtSession,
  dims: ModelDims,
  sequences: readonly ScoreSequence[],
  plan: ScoringPlan,
  constraints: GraphConstraints,
  signal: AbortSignal | undefined,
): Promise<{ results: ScoreResult[]; computedTokens: number }> {
  const sig = signal ? { signal } : {};
  if (plan.scoring === 'naive' && constraints.contiguousRows && sequences.some((s) => s.withAttention)) {
    // Attention rows are sliced as the last rows and columns of a pass: a row that wants them runs alone (no padding).
    const alone = sequences.flatMap((s, i) => (s.withAttention ? [i] : []));
    const rest = sequences.flatMap((s, i) => (s.withAttention ? [] : [i]));
    // One after the other: a wasm session runs one pass at a time.
    const a = await runSequences(session, dims, alone.map((i) => sequences[i]!), { ...plan, maxBatchTokens: 1 }, { contiguousRows: false }, signal);
    const b = await runSequences(session, dims, rest.map((i) => sequences[i]!), plan, constraints, signal);
    const results = new Array<ScoreResult>(sequences.length);
    alone.forEach((i, k) => (results[i] = a.results[k]!));
    rest.forEach((i, k) => (results[i] = b.results[k]!));
    return { results, computedTokens: a.computedTokens + b.computedTokens };
  }
  if (plan.scoring === 'naive') {
    const { maxBatchTokens, maxBatchBytes } = plan;
    const results = await scoreSequences(session, dims, sequences, {
      ...(maxBatchTokens !== undefined ? { maxBatchTokens } : {}),
      ...(maxBatchBytes !== undefined ? { maxBatchBytes } : {}),
      ...(constraints.contiguousRows ? { padding: 'right' as const } : {}),
      ...sig,
    });
    return { results, computedTokens: totalTokens(sequences) };
  }
  const budget = plan.maxBatchBytes !== undefined ? { maxBatchBytes: plan.maxBatchBytes } : {};
  const single = constraints.contiguousRows ? { singleRowPasses: true } : {};
  const { results, stats } = await scoreSequencesShared(session, dims, sequences, { ...budget, ...single, ...sig });
  return { results, computedTokens: stats.computedTokens };
}
