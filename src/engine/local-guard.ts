/**
 * The in-process guard: core + engine in one place. Node uses it directly; the worker exposes the
 * same service over Comlink. Inference calls are serialised (one onnxruntime session, one run at a
 * time); validation happens before any model work, so bad input fails fast even while loading.
 */
import { parseGuardInput } from '../core/guard-input.js';
import { buildContext, type StructuredContext } from '../core/context.js';
import { createLocalRedactor, runDefense, type DefenseResult, type SanitizeRequest, type SentenceRange } from '../core/defense.js';
import { DisposedError, GuardAbortedError, GuardTimeoutError, InvalidOptionsError, isEdgeArmorError } from '../core/errors.js';
import type { CheckOptions, DefendCallbacks, Guard, GuardProgress, GuardStatus } from '../core/guard-api.js';
import { applyModelOptions, type ModelOptionsFile } from '../core/model-options.js';
import { resolveOptions, type GuardOptions, type ResolvedGuardOptions } from '../core/options.js';
import { buildVariants } from '../core/variants.js';
import { judge, judgeFailure, planCheck, type CheckPlan, type ScoringRequestPlan } from '../core/judge.js';
import type { Verdict } from '../core/verdict.js';
import { createEngine, type EngineScores, type ProxyEngine } from './engine.js';
import { loadModelFiles, loadTokenizerFiles, type FileReader } from './model-files.js';
import type { Backend } from './ort-session.js';
import { createRemoteEngine } from './remote-proxy.js';
import type { ModelRuntimeOptions } from './runtime-options.js';

/** Where and how the in-process guard runs its model: the runtime options plus the resolved model location and backends. */
export interface LocalGuardRuntime extends Omit<ModelRuntimeOptions, 'modelManifest'> {
  /** Reads the model's files (integrity-checked against its manifest); with `remoteProxy`, only its tokenizer and config are read. */
  reader: FileReader;
  /** Backends to try, in order; the first that loads is used and the others' failures are reported. */
  backends: readonly Backend[];
  /** Why earlier preferred backends were skipped before loading (e.g. no WebGPU adapter). */
  fallbackReason?: string | null;
  onProgress?: (event: GuardProgress) => void;
  /** A load that failed before the guard was made (the worker's backend planning): every check that needs the model gets the failure policy. */
  loadFailure?: unknown;
}

/** A loaded model and the options its verdicts are judged with (the caller's over the model directory's). */
interface Loaded {
  engine: ProxyEngine;
  options: ResolvedGuardOptions;
}

/** What the engine part of one check returns to the judge. */
interface Scored extends Loaded {
  request: ScoringRequestPlan;
  scores: EngineScores;
  timings: Record<string, number>;
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
  // Validated now so bad options fail fast; the model's own operating point joins them once its files are verified.
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
    modelOptions: null,
  };
  let disposed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  /** The options verdicts are judged with: the caller's `options` (what they set, from any source) over the model's file, over the defaults. */
  function withModelOptions(file: ModelOptionsFile | null): ResolvedGuardOptions {
    if (file === null) return resolved;
    const applied = applyModelOptions(options, file);
    status.modelOptions = applied.status;
    return resolveOptions(applied.options);
  }

  function markReady(engine: ProxyEngine, judged: ResolvedGuardOptions): Loaded {
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
    return { engine, options: judged };
  }

  const ready: Promise<Loaded> = (async () => {
    if (runtime.loadFailure !== undefined) throw runtime.loadFailure;
    if (runtime.remoteProxy) {
      const files = await loadTokenizerFiles(runtime.reader, (file, bytes) => runtime.onProgress?.({ type: 'verified', file, bytes }));
      const judged = withModelOptions(files.modelOptions);
      return markReady(await createRemoteEngine(files, runtime.remoteProxy, runtime.chatTemplate !== undefined ? { chatTemplate: runtime.chatTemplate } : {}), judged);
    }
    const files = await loadModelFiles(runtime.reader, runtime.modelVariant ?? 'q4', (file, bytes) =>
      runtime.onProgress?.({ type: 'verified', file, bytes }),
    );
    const judged = withModelOptions(files.modelOptions);
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
        return markReady(engine, judged);
      } catch (e) {
        failures.push(`${backend}: ${(e as Error).message}`);
        if (backend === runtime.backends[runtime.backends.length - 1]) throw e;
      }
    }
    throw new InvalidOptionsError('Invalid option backends: received an empty list; allowed: one or more of "node", "wasm", "webgpu".', { option: 'backends' });
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

  /** Loads (once), plans the variants for the engine's capabilities and scores them: the engine's part of a check. */
  async function score(context: StructuredContext, plan: Extract<CheckPlan, { verdict: null }>, signal: AbortSignal | undefined): Promise<Scored> {
    const t0 = now();
    const { engine, options: judged } = await ready;
    const tLoaded = now();
    const request = plan.scoring(engine.info);
    const scores = await serial(() => engine.score({ context, ...request, actionText: resolved.actionText, ...(signal ? { signal } : {}) }));
    return { engine, options: judged, request, scores, timings: { waitForModelMs: tLoaded - t0, scoreMs: now() - tLoaded } };
  }

  async function check(raw: unknown, opts: CheckOptions = {}): Promise<Verdict> {
    guardAlive();
    // Invalid input is the caller's bug, not a guard failure: it throws a typed error before any model work.
    const input = parseGuardInput(raw);
    const context = buildContext(input, resolved);
    const plan = planCheck(context, resolved);
    if (plan.verdict) return plan.verdict;
    // Stops this call's model work on the caller's abort or on the deadline.
    const stopWork = new AbortController();
    const forwardAbort = () => stopWork.abort(opts.signal?.reason);
    if (opts.signal?.aborted) forwardAbort();
    else opts.signal?.addEventListener('abort', forwardAbort, { once: true });
    try {
      const { engine, options: judged, request, scores, timings } = await withDeadline(score(context, plan, stopWork.signal), opts.signal, stopWork);
      const tScored = now();
      const verdict = judge({
        context,
        variants: request.variants,
        withAttention: request.withAttention,
        scores,
        options: judged,
        capabilities: engine.info,
        extras: { backend: engine.info.backend, proxy: engine.info.model, timings },
      });
      verdict.timings['attributionMs'] = now() - tScored;
      return verdict;
    } catch (error) {
      if (isEdgeArmorError(error) && error.code === 'aborted') throw error;
      if (opts.signal?.aborted) throw new GuardAbortedError('the check was aborted by the caller');
      return judgeFailure(error, context, resolved, { ...(status.backend ? { backend: status.backend } : {}) });
    } finally {
      opts.signal?.removeEventListener('abort', forwardAbort);
    }
  }

  async function scoreSentenceAblations(raw: unknown, messageIndex: number, ablatedTexts: string[]): Promise<number[]> {
    guardAlive();
    const input = parseGuardInput(raw);
    const context = buildContext(input, resolved);
    const { engine } = await ready;
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
      const loaded = await ready.catch(() => null);
      await loaded?.engine.dispose();
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
