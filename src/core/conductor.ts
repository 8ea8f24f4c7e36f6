/**
 * The conductor: the one path of a check, from the caller's input to the verdict. It validates the
 * input, builds the context, plans, waits for the scorer (the port an engine implements), scores under
 * the call's one deadline, judges, and maps every malfunction to the failure policy; `defend` runs on
 * top of it. The shells (Node, the worker, the CLI) make a conductor and carry its answers; the
 * engines only load and score.
 *
 *   input -> parseGuardInput -> buildContext -> planCheck -> [verdict without the model]
 *                                                     \-> scoreAndJudge (score-and-judge.ts, under the deadline):
 *                                                          cutLongTexts -> Scorer.score -> judge -> verdict
 *                  too long for the window: measured, then per window (windows.ts) -> score -> judge -> merged verdict
 *                                        any failure on the way -> judgeFailure (the policy) -> verdict
 */
import { joinReasons } from './backend-plan.js';
import { buildContext, isPrivilegedTool, type StructuredContext } from './context.js';
import { startDeadline, abortedError } from './deadline.js';
import { createLocalRedactor, runDefense, type DefenseResult, type SanitizeRequest } from './defense.js';
import { ContextTooLongError, DisposedError, isEdgeArmorError } from './errors.js';
import { callLogProbPerToken, countFamiliarity, emptyFamiliarity } from './familiarity.js';
import type { CheckOptions, DefendCallbacks, Guard, GuardStatus } from './guard-api.js';
import { parseGuardInput } from './guard-input.js';
import { scoreAndJudge, type Ready, type ScoringEnv } from './score-and-judge.js';
import { readPlainData } from './json.js';
import { judgeFailure, planCheck, type CheckPlan } from './judge.js';
import { yieldToEventLoop } from './long-texts.js';
import { applyModelOptions, type ModelOptionsFile } from './model-options.js';
import { resolveOptions, type GuardOptions, type ResolvedGuardOptions } from './options.js';
import type { LoadedScorer, Scorer, ScorerSource } from './scorer-port.js';
import type { GuardInput } from './types.js';
import { blockingFindings, definitionVerdict, withDefinitionFindings } from './mcp-definitions/policy.js';
import { buildVariants } from './variants.js';
import type { Verdict } from './verdict.js';
import { defaultWindowTokens } from './window-budget.js';

/** A guard with the sentence scorer the local redactor needs (what a conductor is, wherever it runs). */
export interface LocalGuard extends Guard {
  /** Log-prob deltas of the action when each sentence of one message is removed (normalised by action tokens). */
  scoreSentenceAblations(input: unknown, messageIndex: number, ablatedTexts: string[], options?: CheckOptions): Promise<number[]>;
}

/** The guard a conductor is: a local guard that can also check several calls in one run of the model. */
export interface ConductorGuard extends LocalGuard {
  /**
   * Checks several calls at once, each with the verdict `check` gives it alone; what their contexts share (the
   * calls of one conversation) is scored once. Verdicts come back in input order.
   */
  checkMany(inputs: readonly unknown[], options?: CheckOptions): Promise<Verdict[]>;
}

function total(xs: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < xs.length; i++) sum += xs[i]!;
  return sum;
}

/** The status of a guard whose scorer has not loaded yet. */
export function loadingStatus(fallbackReason: string | null = null, familiarityThreshold: number | null = null): GuardStatus {
  return {
    state: 'loading',
    backend: null,
    fallbackReason,
    model: null,
    variant: null,
    maxContextTokens: null,
    windowTokens: null,
    logitsUnavailable: null,
    attention: false,
    scoring: null,
    modelOptions: null,
    familiarity: emptyFamiliarity(familiarityThreshold),
  };
}

/** Creates the guard that conducts every check over the scorer `source` loads. */
export function createConductor(options: GuardOptions, source: ScorerSource): ConductorGuard {
  // Validated now so bad options fail fast. The caller's options plan, time and police every check; the options
  // verdicts are judged with add the model's own operating point once its files are verified (verdictOptions).
  const callerOptions = resolveOptions(options);
  const status = loadingStatus(source.fallbackReason ?? null, callerOptions.familiarityThreshold);
  let disposed = false;
  // One model, one run at a time: scoring requests queue here.
  let queue: Promise<unknown> = Promise.resolve();
  // Checks enter one macrotask apart (a timer each, chained), however many arrive at once.
  let admitted: Promise<void> = Promise.resolve();
  const admit = (): Promise<void> => (admitted = admitted.then(yieldToEventLoop));
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  /** The options verdicts are verdictOptions with: the caller's (what they set, from any source) over the model's file, over the defaults. */
  function withModelOptions(file: ModelOptionsFile | null): ResolvedGuardOptions {
    if (file === null) return callerOptions;
    const applied = applyModelOptions(options, file);
    status.modelOptions = applied.status;
    return resolveOptions(applied.options);
  }

  function markReady(loaded: LoadedScorer): Ready {
    const { info } = loaded.scorer;
    const verdictOptions = withModelOptions(loaded.modelOptions);
    const windowTokens = info.shape ? Math.min(info.maxContextTokens, defaultWindowTokens(info.shape, verdictOptions.timeoutMs)) : info.maxContextTokens;
    Object.assign(status, {
      state: 'ready',
      backend: info.backend,
      fallbackReason: joinReasons(status.fallbackReason, loaded.fallbackReason),
      model: info.model,
      variant: info.variant,
      maxContextTokens: info.maxContextTokens,
      windowTokens,
      logitsUnavailable: info.logitsUnavailable ?? null,
      attention: info.attention,
      scoring: info.scoring,
      ...(info.rendering !== undefined ? { rendering: info.rendering } : {}),
      familiarity: emptyFamiliarity(verdictOptions.familiarityThreshold),
    } satisfies Partial<GuardStatus>);
    source.onProgress?.({ type: 'session', backend: info.backend });
    source.onProgress?.({ type: 'ready', status: { ...status } });
    return { scorer: loaded.scorer, options: verdictOptions, windowTokens };
  }

  const load = (): Promise<Ready> => {
    const loading = (async () => markReady(await source.load()))();
    loading.catch(() => {
      status.state = 'failed';
    });
    return loading;
  };
  let ready = load();
  const readyStatus = ready.then(() => ({ ...status }));
  readyStatus.catch(() => undefined);

  /**
   * The loaded scorer. A load that failed stays the answer (a model that failed its checks fails them again),
   * except a host that died while loading (a worker crash): the next check that needs the model loads again.
   */
  async function loaded(): Promise<Ready> {
    const attempt = ready;
    try {
      return await attempt;
    } catch (error) {
      if (disposed || !isEdgeArmorError(error) || error.code !== 'worker-crashed') throw error;
      if (ready === attempt) ready = load();
      return ready;
    }
  }

  function guardAlive(): void {
    if (disposed) throw new DisposedError('The guard was disposed; create a new one.');
  }

  /** How the conductor runs a scorer's work: at once where the scorer queues its own requests, else in the conductor's queue. */
  const run = <T>(scorer: Scorer, task: () => Promise<T>): Promise<T> => (scorer.queuesRequests ? task() : serial(task));
  const scoring = (): ScoringEnv => ({ ready: loaded(), run, resolved: callerOptions });

  async function check(raw: unknown, opts: CheckOptions = {}): Promise<Verdict> {
    guardAlive();
    // Invalid input is the caller's bug, not a guard failure: it throws a typed error before any model work.
    // It is read (and copied) now, at the call, as the caller left it; it is validated, and its context built,
    // in tasks of their own, one check per task, so neither a long input nor a burst of simultaneous calls
    // holds the host's event loop (a page's, when the scorer is in a worker) for long at once.
    const copy = readPlainData(raw, 'input');
    await admit();
    const input = parseGuardInput(copy);
    const findings = input.tool_findings ?? [];
    // A finding whose policy blocks the call decides it before the model runs; every other one is evidence beside the
    // verdict. A call outside privilegedTools is not checked, by definitions or by the model.
    const blocking = isPrivilegedTool(input.action.name, callerOptions) ? blockingFindings(findings, input.action.name, callerOptions.toolDefinitions) : [];
    if (blocking.length > 0) return definitionVerdict(findings, blocking, input.action.name);
    return withDefinitionFindings(await checkInput(input, opts), findings);
  }

  async function checkInput(input: GuardInput, opts: CheckOptions): Promise<Verdict> {
    await yieldToEventLoop();
    const context = buildContext(input, callerOptions);
    const plan = planCheck(context, callerOptions);
    if (plan.verdict) return plan.verdict;
    const deadline = startDeadline(callerOptions.timeoutMs, opts.signal);
    try {
      const verdict = await Promise.race([scoreAndJudge(scoring(), [{ context, plan }], deadline.signal).then(([v]) => v!), deadline.expired]);
      if (verdict.reason === 'model') status.familiarity = countFamiliarity(status.familiarity, callLogProbPerToken(verdict.attribution));
      return verdict;
    } catch (error) {
      // The caller's abort and dispose are answers, not malfunctions; the deadline is a malfunction whatever the engine threw on it.
      if (opts.signal?.aborted) throw isEdgeArmorError(error) && error.code === 'aborted' ? error : abortedError();
      if (disposed) throw new DisposedError('The guard was disposed while this check ran.');
      return judgeFailure(deadline.signal.aborted ? deadline.signal.reason : error, context, callerOptions, {
        ...(status.backend ? { backend: status.backend } : {}),
        ...(status.rendering !== undefined ? { rendering: status.rendering } : {}),
      });
    } finally {
      deadline.clear();
    }
  }

  async function checkMany(raws: readonly unknown[], opts: CheckOptions = {}): Promise<Verdict[]> {
    guardAlive();
    // Every input is read (and copied) and validated at the call, as check reads its one.
    const inputs = raws.map((raw, i) => parseGuardInput(readPlainData(raw, `inputs[${i}]`)));
    const verdicts = new Array<Verdict>(inputs.length);
    const pending: Array<{ index: number; input: GuardInput; context: StructuredContext; plan: Extract<CheckPlan, { verdict: null }> }> = [];
    for (const [index, input] of inputs.entries()) {
      const findings = input.tool_findings ?? [];
      const blocking = isPrivilegedTool(input.action.name, callerOptions) ? blockingFindings(findings, input.action.name, callerOptions.toolDefinitions) : [];
      if (blocking.length > 0) {
        verdicts[index] = definitionVerdict(findings, blocking, input.action.name);
        continue;
      }
      await admit();
      const context = buildContext(input, callerOptions);
      const plan = planCheck(context, callerOptions);
      if (plan.verdict) verdicts[index] = withDefinitionFindings(plan.verdict, findings);
      else pending.push({ index, input, context, plan });
    }
    if (pending.length === 0) return verdicts;
    // Each check keeps its own time: the run's deadline is timeoutMs for each check in it.
    const deadline = startDeadline(callerOptions.timeoutMs * pending.length, opts.signal);
    let scored: Verdict[] | null = null;
    try {
      scored = await Promise.race([scoreAndJudge(scoring(), pending, deadline.signal), deadline.expired]);
    } catch (error) {
      if (opts.signal?.aborted) throw isEdgeArmorError(error) && error.code === 'aborted' ? error : abortedError();
      if (disposed) throw new DisposedError('The guard was disposed while these checks ran.');
    } finally {
      deadline.clear();
    }
    if (scored === null || scored.length !== pending.length) {
      // The shared run failed or ran out of time: each check again on its own, with its own deadline and failure policy.
      for (const p of pending) verdicts[p.index] = withDefinitionFindings(await checkInput(p.input, opts), p.input.tool_findings ?? []);
      return verdicts;
    }
    pending.forEach((p, k) => {
      const verdict = scored![k]!;
      if (verdict.reason === 'model') status.familiarity = countFamiliarity(status.familiarity, callLogProbPerToken(verdict.attribution));
      verdicts[p.index] = withDefinitionFindings(verdict, p.input.tool_findings ?? []);
    });
    return verdicts;
  }

  async function scoreSentenceAblations(raw: unknown, messageIndex: number, ablatedTexts: string[], opts: CheckOptions = {}): Promise<number[]> {
    guardAlive();
    const context = buildContext(parseGuardInput(raw), callerOptions);
    const deadline = startDeadline(callerOptions.timeoutMs, opts.signal);
    try {
      const scored = (async () => {
        const { scorer } = await loaded();
        const variants = buildVariants(context).filter((v) => v.kind === 'full');
        const replacements = ablatedTexts.map((content, i) => ({ id: `sentence:${i}`, messageIndex, content }));
        // Each ablation is scored with the whole conversation: one that does not fit the window is measured, not cut and scored.
        const scores = await run(scorer, () => scorer.score({ context, variants, actionText: callerOptions.actionText, withAttention: false, replacements, ifTooLong: 'measure', signal: deadline.signal }));
        if (scores.sizes) {
          throw new ContextTooLongError(
            `the conversation does not fit the model's window of ${scorer.info.maxContextTokens} tokens whole, and each sentence of a flagged result is scored with all of it; the result is withheld instead`,
            { messageIndex, maxContextTokens: scorer.info.maxContextTokens },
          );
        }
        const full = scores.logProbs.get('full')!;
        return replacements.map((r) => (total(full) - total(scores.logProbs.get(r.id)!)) / full.length);
      })();
      return await Promise.race([scored, deadline.expired]);
    } finally {
      deadline.clear();
    }
  }

  const guard: ConductorGuard = {
    ready: readyStatus,
    status: async () => ({ ...status }),
    check,
    checkMany,
    scoreSentenceAblations,
    defend: (raw, callbacks, opts = {}) => defendWith(guard, callerOptions, raw, callbacks, opts),
    async dispose() {
      if (disposed) return;
      disposed = true;
      status.state = 'disposed';
      await source.dispose?.();
      const loaded = await ready.catch(() => null);
      await loaded?.scorer.dispose();
    },
  };
  return guard;
}

/** Runs check + defense over any guard that can score sentence ablations (a conductor, or the worker client). */
export async function defendWith(
  guard: Pick<LocalGuard, 'check' | 'scoreSentenceAblations'>,
  callerOptions: ResolvedGuardOptions,
  raw: unknown,
  callbacks: DefendCallbacks,
  opts: CheckOptions = {},
): Promise<DefenseResult> {
  const input = parseGuardInput(raw);
  const verdict = await guard.check(input, opts);
  const localRedactor = createLocalRedactor(
    (request: SanitizeRequest, ablated: string[]) =>
      guard.scoreSentenceAblations({ ...input, messages: request.messages, action: request.action }, request.span.messageIndex, ablated, opts),
    callerOptions.defense,
  );
  return runDefense(input, verdict, callerOptions, {
    sanitize: callbacks.sanitize ?? localRedactor,
    regenerate: callbacks.regenerate,
    check: (next) => guard.check(next, opts),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}
