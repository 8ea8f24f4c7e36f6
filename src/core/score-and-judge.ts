/**
 * The model's part of a check, and of several checks at once (`checkMany`: the calls of one conversation, whose
 * context is scored once): cutting, measuring, windowing, scoring and judging. One check is the case of one item.
 * The conductor holds the state (the loaded scorer, the queue); these take it as arguments.
 */
import type { StructuredContext } from './context.js';
import { ContextTooLongError } from './errors.js';
import { judge, judgeFailure, judgeUnlikelyTool, planCheck, type CheckPlan, type CheckScores, type ScoringRequestPlan } from './judge.js';
import { cutLongTexts, yieldToEventLoop, type CutContext } from './long-texts.js';
import type { ResolvedGuardOptions } from './options.js';
import type { Scorer, ScoreRequest } from './scorer-port.js';
import type { Verdict, VerdictExtras, WindowsReport } from './verdict.js';
import { mergeWindowVerdicts, windowedJudgeOptions, type JudgedWindow } from './window-verdict.js';
import { planWindows, surelyFits, windowContext, type CheckWindow, type WindowPlan } from './windows.js';

/** A loaded scorer and the options its verdicts are judged with (the caller's over the model directory's). */
export interface Ready {
  scorer: Scorer;
  options: ResolvedGuardOptions;
  /** The window checks are scored in when the maxContextTokens option is not set. */
  windowTokens: number;
}

/** The windows of one check to score, what no window judges, and how many windows were planned. */
interface WindowJobs {
  jobs: Array<{ win: CheckWindow; request: ScoringRequestPlan }>;
  notJudged: WindowsReport['notJudged'];
  windows: number;
}

/** The scores with the conductor's own cut joined to the scorer's truncation report. */
function withCut(scores: CheckScores, cutChars: Record<number, number>): CheckScores {
  if (Object.keys(cutChars).length === 0) return scores;
  const charsCutBeforeTokenizing = { ...scores.truncation.charsCutBeforeTokenizing, ...cutChars };
  return { ...scores, truncation: { ...scores.truncation, charsCutBeforeTokenizing } };
}

/** Several requests in one run where the scorer can share them (`scoreMany`), else one after another. */
async function scoreBatch(scorer: Scorer, requests: readonly ScoreRequest[], signal: AbortSignal): Promise<CheckScores[]> {
  if (scorer.scoreMany) return scorer.scoreMany(requests, signal);
  const out: CheckScores[] = [];
  for (const request of requests) out.push(await scorer.score(request));
  return out;
}

/** What {@link scoreAndJudge} needs of its conductor: the loaded scorer, how it runs a scorer's work, the caller's options. */
export interface ScoringEnv {
  ready: Promise<Ready>;
  /** Runs one piece of a scorer's work: in the conductor's one-run-at-a-time queue, or at once where the scorer queues (scorer-port.ts). */
  run: <T>(scorer: Scorer, task: () => Promise<T>) => Promise<T>;
  resolved: ResolvedGuardOptions;
}

function now(): number {
  return globalThis.performance?.now() ?? Date.now();
}

/** The windows of a check that are scored while the passes last (maxPasses), and what no window judges. */
function planWindowJobs(cut: CutContext, plans: readonly WindowPlan[], scorer: Scorer, judged: ResolvedGuardOptions, resolved: ResolvedGuardOptions): WindowJobs {
  const { context } = cut;
  const jobs: WindowJobs['jobs'] = [];
  const notJudged: WindowsReport['notJudged'] = { messages: [], tools: [] };
  let passes = 0;
  for (const windowPlan of plans) {
    const win = windowContext(context, windowPlan);
    const plan = planCheck(win.context, resolved);
    if (plan.verdict) continue;
    const request = plan.scoring(scorer.info, win.context);
    if (passes + request.variants.length > judged.maxPasses) {
      notJudged.messages.push(...windowPlan.messages.filter((i) => context.messages[i]!.role === 'tool'));
      notJudged.tools.push(...win.context.tools.map((t) => t.name).filter((t) => t !== context.action.name));
      continue;
    }
    passes += request.variants.length;
    jobs.push({ win, request });
  }
  notJudged.messages.sort((a, b) => a - b);
  return { jobs, notJudged, windows: plans.length };
}

/** Judges each scored window, each in a task of its own, and merges their verdicts in the check's own numbering. */
async function judgeWindows(cut: CutContext, planned: WindowJobs, scores: readonly CheckScores[], scorer: Scorer, judged: ResolvedGuardOptions, extras: VerdictExtras): Promise<Verdict> {
  const { context } = cut;
  const { jobs, notJudged } = planned;
  if (jobs.length === 0) {
    const error = new ContextTooLongError(`no window of this check could be scored within maxPasses (${judged.maxPasses}); raise it, or shorten the context`, { maxPasses: judged.maxPasses });
    return { ...judgeFailure(error, context, judged, extras), windows: { count: 0, passes: 0, judged: [], notJudged } };
  }
  const perWindow = planned.windows > 1 ? windowedJudgeOptions(judged) : judged;
  const done: JudgedWindow[] = [];
  for (const [k, { win, request }] of jobs.entries()) {
    await yieldToEventLoop();
    const cutChars = Object.fromEntries(win.messageIndexes.flatMap((orig, i) => (cut.cutChars[orig] === undefined ? [] : [[i, cut.cutChars[orig]!]])));
    const verdict = judge({ context: win.context, ...request, scores: withCut(scores[k]!, cutChars), options: perWindow, capabilities: scorer.info, extras });
    done.push({ win, verdict, passes: request.variants.length });
  }
  await yieldToEventLoop();
  return mergeWindowVerdicts(context, done, notJudged, judged, extras, cut.cutChars);
}

/**
 * The model's part of one or more checks, under one deadline signal. Each is cut to what a window can hold,
 * measured when it may not fit, and scored whole or in windows; every request of a stage goes to the scorer in
 * one run (`scoreMany`), so what the checks share (the calls of one conversation share their context, the windows
 * of a check their head) is scored once.
 */
export async function scoreAndJudge(
  env: ScoringEnv,
  items: ReadonlyArray<{ context: StructuredContext; plan: Extract<CheckPlan, { verdict: null }> }>,
  signal: AbortSignal,
): Promise<Verdict[]> {
  const { ready, run, resolved } = env;
  const t0 = now();
  const { scorer, options: judged, windowTokens } = await ready;
  signal.throwIfAborted();
  const tLoaded = now();
  const budget = Math.min(scorer.info.maxContextTokens, judged.maxContextTokens ?? windowTokens);
  const common = { actionText: resolved.actionText, maxContextTokens: budget, signal };
  // Cut and planned on the caller's thread: each long text cut, and each check's variants planned (duplicate
  // grouping reads every result), in a task of its own.
  const cuts: CutContext[] = [];
  const requests: ScoringRequestPlan[] = [];
  for (const item of items) {
    const cut = await cutLongTexts(item.context, scorer.info.maxTextChars, scorer.info.maxContextTokens, signal);
    await yieldToEventLoop();
    signal.throwIfAborted();
    cuts.push(cut);
    requests.push(item.plan.scoring(scorer.info, cut.context));
  }
  const scores = await run(scorer, () =>
    scoreBatch(scorer, items.map((_, i) => ({ context: cuts[i]!.context, ...requests[i]!, ...common, ...(scorer.info.chatFormat !== 'edgearmor' || !surelyFits(cuts[i]!.context, budget) ? { ifTooLong: 'measure' as const } : {}) })), signal),
  );
  // Measured too long: windows where they can be planned, else scored whole (cut to fit), as a single check does.
  const windowed = new Map<number, WindowJobs>();
  const whole: number[] = [];
  scores.forEach((sc, i) => {
    if (!sc.sizes) return;
    const plans = planWindows(cuts[i]!.context, sc.sizes, budget);
    if (plans) windowed.set(i, planWindowJobs(cuts[i]!, plans, scorer, judged, resolved));
    else whole.push(i);
  });
  if (whole.length > 0) {
    const again = await run(scorer, () => scoreBatch(scorer, whole.map((i) => ({ context: cuts[i]!.context, ...requests[i]!, ...common })), signal));
    whole.forEach((i, k) => (scores[i] = again[k]!));
  }
  const windowJobs = [...windowed.values()].flatMap((w) => w.jobs);
  const windowScores = windowJobs.length > 0 ? await run(scorer, () => scoreBatch(scorer, windowJobs.map((job) => ({ context: job.win.context, ...job.request, ...common })), signal)) : [];
  const tScored = now();
  const extras = { backend: scorer.info.backend, proxy: scorer.info.model, ...(scorer.info.rendering !== undefined ? { rendering: scorer.info.rendering } : {}) };
  const timings = { waitForModelMs: tLoaded - t0, scoreMs: tScored - tLoaded };
  // Judged on the caller's thread (a page's, when the scorer is in a worker): each check, and each window of
  // one, in a task of its own, after the task that received the scores.
  const verdicts: Verdict[] = [];
  let offset = 0;
  for (const [i, cut] of cuts.entries()) {
    const w = windowed.get(i);
    if (w) {
      const verdict = await judgeWindows(cut, w, windowScores.slice(offset, (offset += w.jobs.length)), scorer, judged, extras);
      verdict.timings = { ...verdict.timings, ...timings };
      verdicts.push(verdict);
      continue;
    }
    await yieldToEventLoop();
    signal.throwIfAborted();
    const tJudge = now();
    const verdict = judge({ context: cut.context, ...requests[i]!, scores: withCut(scores[i]!, cut.cutChars), options: judged, capabilities: scorer.info, extras: { ...extras, timings: { ...timings } } });
    verdict.timings['attributionMs'] = now() - tJudge;
    verdicts.push(verdict);
  }
  // The unlikely-tool rule reads the whole check, judged whole or merged from its windows.
  return verdicts.map((v) => judgeUnlikelyTool(v, judged));
}
