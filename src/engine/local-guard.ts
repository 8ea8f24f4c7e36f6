/**
 * The in-process guard: core + engine in one place. Node uses it directly; the worker exposes the
 * same service over Comlink. Inference calls are serialised (one onnxruntime session, one run at a
 * time); validation happens before any model work, so bad input fails fast even while loading.
 */
import { parseGuardInput } from '../core/adapters.js';
import { attributeWithOptions, ruleFromOptions, type AttributionResult } from '../core/attribution.js';
import { analyzeMindGuard } from '../core/mindguard/index.js';
import type { MindGuardVerdict } from '../core/mindguard/types.js';
import { combineToolPoisoning, toolDescriptionAttribution, type ToolPoisoningVerdict } from '../core/tool-poisoning.js';
import { buildContext, type StructuredContext } from '../core/context.js';
import { createLocalRedactor, runDefense, type DefenseResult, type SanitizeRequest, type SentenceRange } from '../core/defense.js';
import { DisposedError, GuardAbortedError, GuardTimeoutError, isEdgeArmorError } from '../core/errors.js';
import type { CheckOptions, DefendCallbacks, Guard, GuardProgress, GuardStatus } from '../core/guard-api.js';
import { resolveOptions, type GuardOptions, type ResolvedGuardOptions } from '../core/options.js';
import { buildVariants } from '../core/variants.js';
import { failureVerdict, modelVerdict, preflightVerdict, type Verdict } from '../core/verdict.js';
import { createEngine, type EngineInfo, type EngineScores, type ProxyEngine, type ScoringMode } from './engine.js';
import { loadModelFiles, loadTokenizerFiles, type FileReader, type ModelVariant } from './model-files.js';
import type { Backend } from './ort-session.js';
import { createRemoteEngine, type RemoteProxyOptions } from './remote-proxy.js';

/** Where and how the in-process guard runs its model. */
export interface LocalGuardRuntime {
  /** Reads the model's files (integrity-checked against its manifest); with `remote`, only its tokenizer and config are read. */
  reader: FileReader;
  /** Score on a remote proxy server instead of a local onnxruntime session (opt-in: the only network use). */
  remote?: RemoteProxyOptions;
  /** Render guard calls with this Jinja chat template instead of the model's. */
  chatTemplate?: string;
  /** Backends to try, in order; the first that loads is used and the others' failures are reported. */
  backends: readonly Backend[];
  /** Why earlier preferred backends were skipped before loading (e.g. no WebGPU adapter). */
  fallbackReason?: string | null;
  /** @defaultValue 'q4' */
  variant?: ModelVariant;
  wasmThreads?: number;
  wasmPaths?: string | Record<string, string>;
  /** @defaultValue 8192 under 'naive'; none under 'auto' */
  maxBatchTokens?: number;
  /** @defaultValue 'auto' */
  scoring?: ScoringMode;
  onProgress?: (event: GuardProgress) => void;
}

/** The guard service: Guard plus the sentence scorer the local redactor needs. */
export interface LocalGuard extends Guard {
  /** Log-prob deltas of the action when each sentence of one message is removed (normalised by action tokens). */
  scoreSentenceAblations(input: unknown, messageIndex: number, ablatedTexts: string[]): Promise<number[]>;
}

function now(): number {
  return globalThis.performance?.now() ?? Date.now();
}

/** Creates a guard that runs the model in this thread. */
export function createLocalGuard(options: GuardOptions, runtime: LocalGuardRuntime): LocalGuard {
  const resolved: ResolvedGuardOptions = resolveOptions(options);
  const status: GuardStatus = {
    state: 'loading',
    backend: null,
    fallbackReason: runtime.fallbackReason ?? null,
    model: null,
    variant: null,
    maxContextTokens: null,
    attention: false,
    scoring: null,
  };
  let disposed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  function markReady(engine: ProxyEngine): ProxyEngine {
    Object.assign(status, {
      state: 'ready',
      backend: engine.info.backend,
      model: engine.info.model,
      variant: engine.info.variant,
      maxContextTokens: engine.info.maxContextTokens,
      attention: engine.info.attention,
      scoring: engine.info.scoring,
    } satisfies Partial<GuardStatus>);
    runtime.onProgress?.({ type: 'session', backend: engine.info.backend });
    runtime.onProgress?.({ type: 'ready', status: { ...status } });
    return engine;
  }

  const ready: Promise<ProxyEngine> = (async () => {
    if (runtime.remote) {
      const files = await loadTokenizerFiles(runtime.reader, (file, bytes) => runtime.onProgress?.({ type: 'verified', file, bytes }));
      return markReady(await createRemoteEngine(files, runtime.remote, runtime.chatTemplate !== undefined ? { chatTemplate: runtime.chatTemplate } : {}));
    }
    const files = await loadModelFiles(runtime.reader, runtime.variant ?? 'q4', (file, bytes) =>
      runtime.onProgress?.({ type: 'verified', file, bytes }),
    );
    const failures: string[] = [];
    for (const backend of runtime.backends) {
      try {
        const engine = await createEngine(files, {
          backend,
          ...(runtime.wasmThreads !== undefined ? { wasmThreads: runtime.wasmThreads } : {}),
          ...(runtime.wasmPaths !== undefined ? { wasmPaths: runtime.wasmPaths } : {}),
          ...(runtime.maxBatchTokens !== undefined ? { maxBatchTokens: runtime.maxBatchTokens } : {}),
          ...(runtime.scoring !== undefined ? { scoring: runtime.scoring } : {}),
          ...(runtime.chatTemplate !== undefined ? { chatTemplate: runtime.chatTemplate } : {}),
        });
        if (failures.length > 0) status.fallbackReason = [status.fallbackReason, ...failures].filter(Boolean).join('; ');
        return markReady(engine);
      } catch (e) {
        failures.push(`${backend}: ${(e as Error).message}`);
        if (backend === runtime.backends[runtime.backends.length - 1]) throw e;
      }
    }
    throw new Error('no backend to load the model on');
  })();
  ready.catch(() => {
    status.state = 'failed';
  });

  const readyStatus = ready.then(() => ({ ...status }));
  readyStatus.catch(() => undefined);

  function guardAlive(): void {
    if (disposed) throw new DisposedError('the guard was disposed; create a new one');
  }

  async function withDeadline<T>(work: Promise<T>, signal: AbortSignal | undefined, stopWork?: AbortController): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new GuardTimeoutError(`the check took longer than timeoutMs = ${resolved.timeoutMs}`, { timeoutMs: resolved.timeoutMs });
        // The answer goes now; the call's tokenizing and inference stop too instead of running on in the background.
        stopWork?.abort(error);
        reject(error);
      }, resolved.timeoutMs);
      if (signal) {
        onAbort = () => reject(new GuardAbortedError('the check was aborted by the caller'));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    try {
      return await Promise.race([work, stop]);
    } finally {
      clearTimeout(timer);
      if (signal && onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  async function score(context: StructuredContext, signal: AbortSignal | undefined): Promise<Verdict> {
    const t0 = now();
    const engine = await ready;
    const tLoaded = now();
    const tp = resolved.toolPoisoning;
    const hasTools = context.tools.length > 0;
    // MindGuard needs the positions of tools and argument values, which EdgeArmor's format knows.
    const withAttention = hasTools && tp.attention && engine.info.attention && resolved.actionText === 'template' && engine.info.chatFormat === 'edgearmor';
    const variants = buildVariants(context, { toolLeaveOneOut: hasTools && tp.leaveOneOut });
    const scores = await serial(() =>
      engine.score({ context, variants, actionText: resolved.actionText, withAttention, ...(signal ? { signal } : {}) }),
    );
    const tScored = now();
    const attribution = attributeWithOptions({ spans: context.spans, variants, logProbs: scores.logProbs, parts: scores.actionLayout?.parts }, resolved);
    const verdict = modelVerdict(attribution, {
      backend: engine.info.backend,
      proxy: engine.info.model,
      timings: { waitForModelMs: tLoaded - t0, scoreMs: tScored - tLoaded },
    });
    const cut = scores.truncation;
    if (cut.droppedToolDefinitions || Object.keys(cut.shortenedMessages).length > 0 || cut.charsCutBeforeTokenizing) verdict.truncation = cut;
    if (hasTools) {
      const tAttention = now();
      verdict.toolPoisoning = toolPoisoningOf(context, scores, attribution, withAttention, engine.info);
      verdict.timings['toolPoisoningMs'] = now() - tAttention;
      if (verdict.toolPoisoning.detected) {
        verdict.detected = true;
        verdict.decision = 'block';
      }
    }
    verdict.timings['attributionMs'] = now() - tScored;
    return verdict;
  }

  function toolPoisoningOf(
    context: StructuredContext,
    scores: EngineScores,
    attribution: AttributionResult,
    withAttention: boolean,
    { attention: modelHasAttention, attentionUnavailable, chatFormat }: EngineInfo,
  ): ToolPoisoningVerdict {
    const tp = resolved.toolPoisoning;
    const unavailable: string[] = [];
    if (scores.truncation.droppedToolDefinitions) {
      unavailable.push('tool definitions were dropped to fit the context window');
      return combineToolPoisoning(null, null, context.action.name, unavailable);
    }
    // Before any tool result only tool poisoning can drive a call, and both signals get their own thresholds.
    const beforeToolResults = context.messages.every((m) => m.role !== 'tool');
    const margin = beforeToolResults ? tp.beforeToolResults.leaveOneOutMargin : tp.leaveOneOutMargin;
    const mindguardOptions = beforeToolResults ? { ...tp.mindguard, airThreshold: tp.beforeToolResults.airThreshold } : tp.mindguard;
    // Descriptions keep the seeds' weighting of dU: their margin was calibrated with it.
    const loo = tp.leaveOneOut ? toolDescriptionAttribution(attribution, ruleFromOptions({ ...resolved, userWeight: 1 }), resolved.tau - margin) : null;
    let attention: MindGuardVerdict | null = null;
    if (!tp.attention) unavailable.push('attention: turned off (toolPoisoning.attention = false)');
    else if (!modelHasAttention) {
      unavailable.push(`attention: ${attentionUnavailable ?? 'the model exports no attention rows'}; MindGuard falls back to leave-one-out over tool descriptions`);
    }
    else if (chatFormat !== 'edgearmor') unavailable.push("attention: the model's chat template gives no token positions for tools and argument values; MindGuard falls back to leave-one-out over tool descriptions");
    else if (!withAttention || !scores.attention || !scores.actionLayout) unavailable.push('attention: needs the template action text');
    else {
      const nameRows = scores.actionLayout.parts.filter((p) => p === 'name').length;
      attention = analyzeMindGuard(
        scores.attention.data,
        scores.attention.dims,
        {
          user: scores.layout.user,
          tools: scores.layout.tools.map((t) => ({ tool: t.tool, ranges: [{ start: t.start, end: t.end }] })),
          toolResults: scores.layout.toolResults.map((r) => [{ start: r.start, end: r.end }]),
          invokedTool: context.action.name,
          controlTarget: [{ start: 0, end: Math.max(1, nameRows) }],
          dataTarget: scores.actionLayout.valueRows,
        },
        mindguardOptions,
      );
    }
    return combineToolPoisoning(loo, attention, context.action.name, unavailable);
  }

  async function check(raw: unknown, opts: CheckOptions = {}): Promise<Verdict> {
    guardAlive();
    // Invalid input is the caller's bug, not a guard failure: it throws a typed error before any model work.
    const input = parseGuardInput(raw);
    const context = buildContext(input, resolved);
    const pre = preflightVerdict(context);
    // A call with no tool result yet can still be driven by a poisoned tool description.
    const toolSignals = context.tools.length > 0 && (resolved.toolPoisoning.leaveOneOut || resolved.toolPoisoning.attention);
    if (pre && !(pre.reason === 'no-untrusted-spans' && toolSignals)) return pre;
    // Stops this call's model work on the caller's abort or on the deadline.
    const stopWork = new AbortController();
    const forwardAbort = () => stopWork.abort(opts.signal?.reason);
    if (opts.signal?.aborted) forwardAbort();
    else opts.signal?.addEventListener('abort', forwardAbort, { once: true });
    try {
      return await withDeadline(score(context, stopWork.signal), opts.signal, stopWork);
    } catch (error) {
      if (isEdgeArmorError(error) && error.code === 'aborted') throw error;
      if (opts.signal?.aborted) throw new GuardAbortedError('the check was aborted by the caller');
      return failureVerdict(error, resolved, context.privileged, { ...(status.backend ? { backend: status.backend } : {}) });
    } finally {
      opts.signal?.removeEventListener('abort', forwardAbort);
    }
  }

  async function scoreSentenceAblations(raw: unknown, messageIndex: number, ablatedTexts: string[]): Promise<number[]> {
    guardAlive();
    const input = parseGuardInput(raw);
    const context = buildContext(input, resolved);
    const engine = await ready;
    const variants = buildVariants(context).filter((v) => v.kind === 'full');
    const replacements = ablatedTexts.map((content, i) => ({ id: `sentence:${i}`, messageIndex, content }));
    const scores = await serial(() => engine.score({ context, variants, actionText: resolved.actionText, withAttention: false, replacements }));
    const full = scores.logProbs.get('full')!;
    const sum = (xs: Float64Array) => xs.reduce((a, b) => a + b, 0);
    return replacements.map((r) => (sum(full) - sum(scores.logProbs.get(r.id)!)) / full.length);
  }

  const guard: LocalGuard = {
    ready: readyStatus,
    status: async () => ({ ...status }),
    check,
    scoreSentenceAblations,
    async defend(raw: unknown, callbacks: DefendCallbacks, opts: CheckOptions = {}): Promise<DefenseResult> {
      return defendWith(guard, resolved, raw, callbacks, opts);
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      status.state = 'disposed';
      const engine = await ready.catch(() => null);
      await engine?.dispose();
    },
  };
  return guard;
}

/** Runs check + defense for any guard that can score sentence ablations (in-process or worker client). */
export async function defendWith(
  guard: Pick<LocalGuard, 'check' | 'scoreSentenceAblations'>,
  resolved: ResolvedGuardOptions,
  raw: unknown,
  callbacks: DefendCallbacks,
  opts: CheckOptions = {},
): Promise<DefenseResult> {
  const input = parseGuardInput(raw);
  const verdict = await guard.check(input, opts);
  const localRedactor = createLocalRedactor(
    (request: SanitizeRequest, ablated: string[], _ranges: SentenceRange[]) =>
      guard.scoreSentenceAblations({ ...input, messages: request.messages, action: request.action }, request.span.messageIndex, ablated),
    resolved.defense,
  );
  return runDefense(input, verdict, resolved, {
    sanitize: callbacks.sanitize ?? localRedactor,
    regenerate: callbacks.regenerate,
    check: (next) => guard.check(next, opts),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}
