/**
 * The proxy engine: turns a structured context and its ablation variants into action-token
 * log-probs (and attention rows for the full context) with one batched run of the model.
 */
import { ContextTooLongError, ModelLoadError } from '../core/errors.js';
import type { StructuredContext } from '../core/context.js';
import type { Variant } from '../core/variants.js';
import type { ActionTokenPart } from '../core/attribution.js';
import type { ActionTextMode } from '../core/options.js';
import type { BackendName } from '../core/guard-api.js';
import { callJson, formatJson, encodeActionCall, encodeActionRaw, encodeBos, encodeMessage, encodeToolDef } from './chat-format.js';
import type { ModelFiles } from './model-files.js';
import { createOrtSession, type Backend, type OrtSession } from './ort-session.js';
import { scoreSequencesShared } from './prefix-scorer.js';
import { scoreSequences, type ActionAttention, type ModelDims, type ScoreResult, type ScoreSequence } from './scorer.js';
import { createProxyTokenizer, type ProxyTokenizer } from './tokenizer.js';

/** Options for {@link createEngine}. */
export interface EngineOptions {
  backend: Backend;
  /** wasm threads (onnxruntime-web only). */
  wasmThreads?: number;
  /** onnxruntime-web's .wasm location, served by the app itself. */
  wasmPaths?: string | Record<string, string>;
  /** Padded tokens per forward pass of the 'naive' scoring path. @defaultValue 8192 */
  maxBatchTokens?: number;
  /**
   * 'prefix': compute each shared token prefix of the variants once and branch from its KV cache
   * (prefix-scorer.ts); 'naive': every variant's full sequence, batched (the reference path).
   * @defaultValue 'prefix'
   */
  scoring?: ScoringMode;
  /** Estimated bytes per forward pass on the 'prefix' path (KV, attention, activations, logits). @defaultValue 64 MiB */
  maxBatchBytes?: number;
}

/** How the engine runs the variants. */
export type ScoringMode = 'prefix' | 'naive';

/** What the engine knows about itself. */
export interface EngineInfo {
  model: string;
  /** The onnxruntime backend, or 'remote' for a scoring server. */
  backend: BackendName;
  variant: string;
  /** The longest sequence the model takes (config.json max_position_embeddings). */
  maxContextTokens: number;
  /** Whether the model exposes attention rows (EdgeArmor's export extension). */
  attention: boolean;
}

/** Token ranges of the full context, for MindGuard (half-open, in sequence positions). */
export interface ContextLayout {
  user: Array<{ start: number; end: number }>;
  tools: Array<{ tool: string; start: number; end: number }>;
  toolResults: Array<{ messageIndex: number; start: number; end: number }>;
  actionStart: number;
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
}

/** What was cut to fit the context window. */
export interface TruncationReport {
  droppedToolDefinitions: boolean;
  /** Message index -> tokens removed from its middle. */
  shortenedMessages: Record<number, number>;
}

/** Scoring request for one guard call. */
export interface ScoreRequest {
  context: StructuredContext;
  variants: readonly Variant[];
  actionText: ActionTextMode;
  withAttention: boolean;
  /** Extra sequences: the full context with one message's text replaced (sentence-level leave-one-out). */
  replacements?: ReadonlyArray<{ id: string; messageIndex: number; content: string }>;
  signal?: AbortSignal;
}

/** A loaded proxy model that scores guard calls. */
export interface ProxyEngine {
  readonly info: EngineInfo;
  readonly tokenizer: ProxyTokenizer;
  score(request: ScoreRequest): Promise<EngineScores>;
  /** Scores raw token sequences (context ids, then action ids) as given: for baselines that build their own prompts. */
  scoreTokens(sequences: readonly ScoreSequence[], signal?: AbortSignal): Promise<ScoreResult[]>;
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
  info: EngineInfo;
  tokenizer: ProxyTokenizer;
  /** Scores the variants of guard calls. */
  run: SequenceRunner;
  /** Scores raw sequences as given (baselines); defaults to `run`. */
  runTokens?: SequenceRunner;
  dispose(): Promise<void>;
}

/** Wraps a sequence runner with the rendering, truncation and ablation of guard calls. */
export function engineFromParts(parts: EngineParts): ProxyEngine {
  const runTokens = parts.runTokens ?? parts.run;
  return {
    info: parts.info,
    tokenizer: parts.tokenizer,
    score: (request) => scoreRequest(parts.tokenizer, parts.info, parts.run, request),
    scoreTokens: async (sequences, signal) => (await runTokens(sequences, signal)).results,
    dispose: () => parts.dispose(),
  };
}

/** The model's longest sequence, from config.json. */
export function maxPositionsFromConfig(config: Record<string, unknown>): number {
  const v = config['max_position_embeddings'];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ModelLoadError(`config.json: "max_position_embeddings" must be a positive integer, received ${JSON.stringify(v)}`, { key: 'max_position_embeddings' });
  }
  return v;
}

function dimsFromConfig(config: Record<string, unknown>, padTokenId: number): ModelDims & { maxPositions: number } {
  const num = (key: string, fallback?: number): number => {
    const v = config[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new ModelLoadError(`config.json: "${key}" must be a positive integer, received ${JSON.stringify(v)}`, { key });
    }
    return v;
  };
  const hidden = num('hidden_size');
  const heads = num('num_attention_heads');
  return {
    numLayers: num('num_hidden_layers'),
    numHeads: heads,
    numKeyValueHeads: num('num_key_value_heads', heads),
    headDim: num('head_dim', hidden / heads),
    vocabSize: num('vocab_size'),
    padTokenId,
    maxPositions: maxPositionsFromConfig(config),
    hiddenSize: hidden,
    intermediateSize: num('intermediate_size', 4 * hidden),
  };
}

/** Loads a model's verified files into an engine on the chosen backend. */
export async function createEngine(files: ModelFiles, options: EngineOptions): Promise<ProxyEngine> {
  const tokenizer = createProxyTokenizer({ tokenizerJson: files.tokenizerJson, tokenizerConfig: files.tokenizerConfig });
  const dims = dimsFromConfig(files.config, tokenizer.controlId('<|pad|>'));
  let session: OrtSession;
  try {
    session = await createOrtSession(files.onnx, {
      backend: options.backend,
      ...(options.wasmThreads !== undefined ? { wasmThreads: options.wasmThreads } : {}),
      ...(options.wasmPaths !== undefined ? { wasmPaths: options.wasmPaths } : {}),
      gpuBufferOutputs: Array.from({ length: dims.numLayers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat(),
    });
  } catch (e) {
    throw new ModelLoadError(`could not create an onnxruntime session on backend "${options.backend}": ${(e as Error).message}`, {
      backend: options.backend,
    });
  }
  const info: EngineInfo = {
    model: files.manifest.model,
    backend: options.backend,
    variant: files.variant,
    maxContextTokens: dims.maxPositions,
    attention: session.outputNames.some((n) => n.startsWith('attentions.')),
  };
  const maxBatchTokens = options.maxBatchTokens ?? 8192;
  return engineFromParts({
    info,
    tokenizer,
    run: (sequences, signal) => runSequences(session, dims, sequences, options, signal),
    runTokens: async (sequences, signal) => ({
      results: await scoreSequences(session, dims, sequences, { maxBatchTokens, ...(signal ? { signal } : {}) }),
      computedTokens: sequences.reduce((a, s) => a + s.context.length + s.action.length, 0),
    }),
    dispose: () => session.release(),
  });
}

/** Where the parts of a template-rendered action sit among its tokens. */
export interface ActionLayout {
  /** Part label per token: 'name' while it still covers `{"name": "<tool name>"`, then 'arguments'. */
  parts: ActionTokenPart[];
  /** Token rows of the argument VALUES (MindGuard's data-flow target), half-open. */
  valueRows: Array<{ start: number; end: number }>;
}

/** Byte ranges of the argument values in `callJson(name, args)`. */
function valueByteRanges(name: string, args: unknown): Array<[number, number]> {
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  let offset = bytes(`{"name": ${JSON.stringify(name)}, "arguments": `);
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return [[offset, offset + bytes(formatJson(args))]];
  }
  offset += 1; // "{"
  const ranges: Array<[number, number]> = [];
  Object.entries(args as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .forEach(([k, v], i) => {
      if (i > 0) offset += 2; // ", "
      offset += bytes(`${JSON.stringify(k)}: `);
      const len = bytes(formatJson(v));
      ranges.push([offset, offset + len]);
      offset += len;
    });
  return ranges;
}

/** Labels the action's tokens (name vs arguments) and finds the rows of its argument values. */
export function actionLayout(tokenizer: Pick<ProxyTokenizer, 'tokenByteLength'>, ids: readonly number[], name: string, args: unknown): ActionLayout {
  const nameEnd = new TextEncoder().encode(`{"name": ${JSON.stringify(name)}`).length;
  const values = valueByteRanges(name, args);
  const parts: ActionTokenPart[] = [];
  const valueRows: Array<{ start: number; end: number }> = [];
  let offset = 0;
  ids.forEach((id, row) => {
    const end = offset + tokenizer.tokenByteLength(id);
    parts.push(offset < nameEnd ? 'name' : 'arguments');
    if (values.some(([a, b]) => offset < b && end > a)) {
      const last = valueRows[valueRows.length - 1];
      if (last && last.end === row) last.end = row + 1;
      else valueRows.push({ start: row, end: row + 1 });
    }
    offset = end;
  });
  return { parts, valueRows };
}

const MIN_KEPT_MESSAGE_TOKENS = 32;

async function scoreRequest(tokenizer: ProxyTokenizer, info: EngineInfo, run: SequenceRunner, request: ScoreRequest): Promise<EngineScores> {
  const { context, variants } = request;
  const action =
    request.actionText === 'raw'
      ? encodeActionRaw(tokenizer, context.action.raw_text ?? callJson(context.action.name, context.action.arguments))
      : encodeActionCall(tokenizer, context.action.name, context.action.arguments);
  const bos = encodeBos(tokenizer);
  let toolIds = context.tools.map((t) => encodeToolDef(tokenizer, t));
  const messageIds = context.messages.map((m) => encodeMessage(tokenizer, m));
  const truncation: TruncationReport = { droppedToolDefinitions: false, shortenedMessages: {} };

  // Truncation policy, applied once to the full context so every variant sees the same text:
  // 1) drop tool definitions; 2) cut the middle of the longest non-user message (tool results,
  // assistant text, system prompt), never below 32 tokens; never touch user turns or the action.
  const budget = info.maxContextTokens;
  const total = () =>
    bos.length + toolIds.reduce((a, t) => a + t.length, 0) + messageIds.reduce((a, m) => a + m.length, 0) + action.prefix.length + action.ids.length;
  if (total() > budget && toolIds.length > 0) {
    toolIds = [];
    truncation.droppedToolDefinitions = true;
  }
  while (total() > budget) {
    let longest = -1;
    context.messages.forEach((m, i) => {
      if (m.role !== 'user' && messageIds[i]!.length > MIN_KEPT_MESSAGE_TOKENS && (longest < 0 || messageIds[i]!.length > messageIds[longest]!.length)) {
        longest = i;
      }
    });
    if (longest < 0) {
      throw new ContextTooLongError(
        `the context needs ${total()} tokens after truncation, more than the model's ${budget}: user messages and the action alone do not fit`,
        { tokens: total(), maxContextTokens: budget },
      );
    }
    const ids = messageIds[longest]!;
    const keep = Math.max(MIN_KEPT_MESSAGE_TOKENS, ids.length - (total() - budget));
    const head = Math.ceil(keep / 2);
    messageIds[longest] = [...ids.slice(0, head), ...ids.slice(ids.length - (keep - head))];
    truncation.shortenedMessages[longest] = (truncation.shortenedMessages[longest] ?? 0) + ids.length - keep;
  }

  const droppedTools = (v: Variant) => new Set(v.dropTools ?? []);
  const sequences = variants.map((v) => {
    const dropped = droppedTools(v);
    const tools = toolIds.filter((_, i) => !dropped.has(context.tools[i]!.name));
    const ctx = [...bos, ...tools.flat(), ...v.keep.flatMap((i) => messageIds[i]!), ...action.prefix];
    return { context: ctx, action: action.ids, withAttention: request.withAttention && info.attention && v.kind === 'full' };
  });
  const replacements = request.replacements ?? [];
  for (const r of replacements) {
    const original = context.messages[r.messageIndex];
    if (original === undefined) throw new RangeError(`replacement "${r.id}": no message ${r.messageIndex}`);
    const replaced = encodeMessage(tokenizer, { ...original, content: r.content });
    const msgs = messageIds.map((ids, i) => (i === r.messageIndex ? replaced : ids));
    sequences.push({ context: [...bos, ...toolIds.flat(), ...msgs.flat(), ...action.prefix], action: action.ids, withAttention: false });
  }
  const { results, computedTokens } = await run(sequences, request.signal);

  const layout: ContextLayout = { user: [], tools: [], toolResults: [], actionStart: 0 };
  let pos = bos.length;
  toolIds.forEach((ids, i) => {
    layout.tools.push({ tool: context.tools[i]!.name, start: pos, end: pos + ids.length });
    pos += ids.length;
  });
  messageIds.forEach((ids, i) => {
    const role = context.messages[i]!.role;
    if (role === 'user') layout.user.push({ start: pos, end: pos + ids.length });
    if (role === 'tool') layout.toolResults.push({ messageIndex: i, start: pos, end: pos + ids.length });
    pos += ids.length;
  });
  layout.actionStart = pos + action.prefix.length;

  const logProbs = new Map<string, Float64Array>();
  variants.forEach((v, i) => logProbs.set(v.id, results[i]!.tokenLogProbs));
  replacements.forEach((r, i) => logProbs.set(r.id, results[variants.length + i]!.tokenLogProbs));
  const fullIndex = variants.findIndex((v) => v.kind === 'full');
  const attention = fullIndex >= 0 ? results[fullIndex]!.attention : undefined;
  return {
    logProbs,
    actionLayout: request.actionText === 'raw' ? undefined : actionLayout(tokenizer, action.ids, context.action.name, context.action.arguments),
    actionTokenIds: action.ids,
    ...(attention ? { attention } : {}),
    layout,
    truncation,
    computedTokens,
  };
}

async function runSequences(
  session: OrtSession,
  dims: ModelDims,
  sequences: readonly ScoreSequence[],
  options: EngineOptions,
  signal: AbortSignal | undefined,
): Promise<{ results: ScoreResult[]; computedTokens: number }> {
  const sig = signal ? { signal } : {};
  if ((options.scoring ?? 'prefix') === 'naive') {
    const results = await scoreSequences(session, dims, sequences, { maxBatchTokens: options.maxBatchTokens ?? 8192, ...sig });
    return { results, computedTokens: sequences.reduce((a, s) => a + s.context.length + s.action.length, 0) };
  }
  const { results, stats } = await scoreSequencesShared(session, dims, sequences, {
    ...(options.maxBatchBytes !== undefined ? { maxBatchBytes: options.maxBatchBytes } : {}),
    ...sig,
  });
  return { results, computedTokens: stats.computedTokens };
}
