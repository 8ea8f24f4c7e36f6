/**
 * The one place a verdict is decided. Every guard (in-process, in a worker, on a scoring server) gets
 * its verdicts from these functions: `planCheck` says whether a call needs the model and which
 * variants to score, `judge` turns the scores into the verdict, `judgeFailure` maps a malfunction to
 * the failure policy. The shells only load the model, score and carry the result.
 */
import { attributeWithOptions, ruleFromOptions, type ActionTokenPart, type AttributionResult } from './attribution.js';
import type { StructuredContext } from './context.js';
import { ContextTooLongError } from './errors.js';
import { toolNameLogProbPerToken } from './familiarity.js';
import { messageRefs } from './message-ref.js';
import { analyzeMindGuard } from './mindguard/index.js';
import type { MindGuardVerdict } from './mindguard/types.js';
import { nameStrongParts } from './named-parts.js';
import type { ResolvedGuardOptions } from './options.js';
import type { ContextSizes } from './windows.js';
import {
  argumentValueList,
  callQuotes,
  combineToolPoisoning,
  quotedValues,
  toolDescriptionAttribution,
  type ToolDescriptionAttribution,
  type ToolPoisoningVerdict,
} from './tool-poisoning.js';
import { buildVariants, type Variant } from './variants.js';
import { failureVerdict, modelVerdict, notPrivilegedVerdict, noUntrustedSpansVerdict, type TruncationReport, type Verdict, type VerdictExtras } from './verdict.js';

/** What the scorer can do, as far as the judge cares (plain data: it crosses the worker boundary). */
export interface ScorerCapabilities {
  /** Whether the model exposes attention rows. */
  attention: boolean;
  /** Why a model without attention rows has none. */
  attentionUnavailable: string | null;
  /** 'edgearmor' when the proxy renders EdgeArmor's chat format, 'template' for a chat template (both give where tools and argument values sit). */
  chatFormat: string;
}

/** The scores of one check as the engine returns them: plain data. */
export interface CheckScores {
  /** Per variant id, the log-prob of each action token. */
  logProbs: ReadonlyMap<string, ArrayLike<number>>;
  /** Part labels and argument-value rows of the action tokens (template action text only). */
  actionLayout?: { parts: readonly ActionTokenPart[]; valueRows: ReadonlyArray<{ start: number; end: number; value?: number }> } | undefined;
  /** Attention rows of the full variant's action tokens, when asked and available. */
  attention?: { data: Float32Array; dims: { layers: number; heads: number; rows: number; cols: number } } | undefined;
  /** Where each component sits in the full variant's sequence. */
  layout: {
    user: ReadonlyArray<{ start: number; end: number }>;
    tools: ReadonlyArray<{ tool: string; start: number; end: number }>;
    toolResults: ReadonlyArray<{ start: number; end: number }>;
  };
  /** What the truncation policy cut to fit the model's window, and what was cut before tokenizing (texts longer than any window holds). */
  truncation: TruncationReport;
  /** Set, and nothing scored, when the request asked to measure a context too long for the window (ScoreRequest.ifTooLong). */
  sizes?: ContextSizes;
}

/** What a check needs from the model: the variants to score and whether attention rows are wanted. */
export interface ScoringRequestPlan {
  variants: Variant[];
  withAttention: boolean;
}

/** A check's plan: a verdict that needs no model, or what to score. */
/**
 * A call decided without the model, or how to score it: `scoring` plans the variants of the context as
 * it will be scored (the planned context with its long texts cut, core/long-texts.ts; the same by default).
 */
export type CheckPlan = { verdict: Verdict } | { verdict: null; scoring: (capabilities: ScorerCapabilities, scored?: StructuredContext) => ScoringRequestPlan };

/** Whether the tool-description signals apply to this context under the options. */
function toolSignalsApply(context: Pick<StructuredContext, 'tools'>, options: Pick<ResolvedGuardOptions, 'toolPoisoning'>): boolean {
  return context.tools.length > 0 && (options.toolPoisoning.leaveOneOut || options.toolPoisoning.attention);
}

/**
 * The verdict a call gets without the model, or null when it must be scored: a call to a tool outside
 * `privilegedTools` is allowed; so is a context without untrusted spans, unless it lists tools whose
 * descriptions could have driven the call (a first call hijacked by a poisoned tool description).
 */
export function preflight(context: Pick<StructuredContext, 'privileged' | 'spans' | 'action' | 'tools'>, options: Pick<ResolvedGuardOptions, 'toolPoisoning'>): Verdict | null {
  if (!context.privileged) return notPrivilegedVerdict(context.action.name);
  if (context.spans.length === 0 && !toolSignalsApply(context, options)) return noUntrustedSpansVerdict();
  return null;
}

/** Whether MindGuard's attention rows are worth asking for: they need tools, attention rows and the template action text (whose argument values have positions). */
export function wantsAttention(context: Pick<StructuredContext, 'tools'>, options: Pick<ResolvedGuardOptions, 'toolPoisoning' | 'actionText'>, capabilities: ScorerCapabilities): boolean {
  return context.tools.length > 0 && options.toolPoisoning.attention && capabilities.attention && options.actionText === 'template';
}

/** Plans one check: the verdict when no scoring is needed, else the variants to score and whether attention is wanted. */
export function planCheck(context: StructuredContext, options: ResolvedGuardOptions): CheckPlan {
  const pre = preflight(context, options);
  if (pre) return { verdict: pre };
  return {
    verdict: null,
    scoring: (capabilities, scored = context) => ({
      variants: buildVariants(scored, { toolLeaveOneOut: scored.tools.length > 0 && options.toolPoisoning.leaveOneOut, groups: options.groupAblation, callSentences: options.callSentences }),
      withAttention: wantsAttention(scored, options, capabilities),
    }),
  };
}

/** Everything the judge reads: the context, what was scored, the scores and the resolved options. */
export interface JudgeInput {
  context: StructuredContext;
  /** The variants that were scored (from {@link planCheck}). */
  variants: readonly Variant[];
  scores: CheckScores;
  options: ResolvedGuardOptions;
  capabilities: ScorerCapabilities;
  /** Whether attention rows were asked for (from {@link planCheck}). */
  withAttention: boolean;
  /** Backend, proxy and timings to carry on the verdict. */
  extras?: VerdictExtras;
}

/** Turns one check's scores into its verdict: leave-one-out attribution over spans, then tool poisoning (either blocks). */
export function judge(input: JudgeInput): Verdict {
  const { context, variants, scores, options } = input;
  const attribution = attributeWithOptions({ spans: context.spans, variants, logProbs: scores.logProbs, parts: scores.actionLayout?.parts }, options);
  const verdict = modelVerdict(attribution, input.extras ?? {});
  const cut = scores.truncation;
  if (cut.droppedToolDefinitions || Object.keys(cut.shortenedMessages).length > 0 || cut.charsCutBeforeTokenizing) {
    verdict.truncation = {
      droppedToolDefinitions: cut.droppedToolDefinitions,
      shortenedMessages: { ...cut.shortenedMessages },
      ...(cut.charsCutBeforeTokenizing ? { charsCutBeforeTokenizing: { ...cut.charsCutBeforeTokenizing } } : {}),
      ...(cut.keptCallSentences ? { keptCallSentences: { ...cut.keptCallSentences } } : {}),
    };
  }
  const cutSpans = options.truncatedSpans === 'fail' ? truncatedSpans(context, cut) : [];
  const droppedTools = options.truncatedSpans === 'fail' && cut.droppedToolDefinitions;
  if (cutSpans.length > 0 || droppedTools) {
    const what = [
      ...(cutSpans.length > 0 ? [`untrusted tool results were cut to fit the context window (${messageRefs(cutSpans)})`] : []),
      ...(droppedTools ? ['the tool definitions were dropped to fit the context window'] : []),
    ];
    const error = new ContextTooLongError(
      `${what.join(' and ')}, and truncatedSpans is 'fail': the cut part may hold the injection, so the guard does not judge the call.`,
      { messages: cutSpans, droppedToolDefinitions: cut.droppedToolDefinitions },
    );
    return { ...judgeFailure(error, context, options, input.extras ?? {}), ...(verdict.truncation ? { truncation: verdict.truncation } : {}) };
  }
  if (context.tools.length > 0) {
    verdict.toolPoisoning = judgeToolPoisoning(input, attribution);
    if (verdict.toolPoisoning.detected) {
      verdict.detected = true;
      verdict.decision = 'block';
    }
  }
  return nameStrongParts(verdict, options.relativeFloor, context.action.name);
}

/**
 * The unlikely-tool rule, after the model's verdict (whole or merged from its windows): with
 * `unlikelyToolThreshold` set, a call whose tool the proxy expected less than it (log-probability per token of
 * the tool's name, the least over the check's windows) is blocked. Leave-one-out blocks a call an injection
 * explains; this blocks one whose tool nothing in the context explains to a proxy that knows the agent, which
 * is what an injection the proxy does not follow leaves behind.
 */
export function judgeUnlikelyTool(verdict: Verdict, options: Pick<ResolvedGuardOptions, 'unlikelyToolThreshold'>): Verdict {
  const threshold = options.unlikelyToolThreshold;
  if (threshold === null || verdict.reason !== 'model') return verdict;
  const logProbPerToken = toolNameLogProbPerToken(verdict.attribution);
  if (logProbPerToken === null) return verdict;
  const flagged = logProbPerToken < threshold;
  return { ...verdict, unlikelyTool: { logProbPerToken, threshold, flagged }, ...(flagged ? { detected: true, decision: 'block' as const } : {}) };
}

/** Message indexes of the untrusted spans the window's truncation (or the cut before tokenizing) shortened, in order. */
export function truncatedSpans(context: Pick<StructuredContext, 'spans'>, cut: Pick<JudgeInput['scores']['truncation'], 'shortenedMessages' | 'charsCutBeforeTokenizing'>): number[] {
  const shortened = new Set([...Object.keys(cut.shortenedMessages), ...Object.keys(cut.charsCutBeforeTokenizing ?? {})].map(Number));
  return [...new Set(context.spans.map((s) => s.messageIndex).filter((i) => shortened.has(i)))].sort((a, b) => a - b);
}

/** Tool poisoning from leave-one-out over descriptions and MindGuard's attention, with the first-call thresholds before any tool result. */
export function judgeToolPoisoning(input: Omit<JudgeInput, 'variants' | 'extras'>, attribution: AttributionResult): ToolPoisoningVerdict {
  const { context, scores, options, capabilities, withAttention } = input;
  const tp = options.toolPoisoning;
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
  let loo: ToolDescriptionAttribution[] | null = null;
  if (tp.leaveOneOut) {
    const argumentValues = argumentValueList(context.action.arguments);
    // The value rule judges a description only on the values its definition quotes (a planted value is given there).
    const quotes = quotedValues(context.tools, argumentValues);
    const values = tp.valueMargin !== null && scores.actionLayout ? { rows: scores.actionLayout.valueRows, margin: tp.valueMargin, quotes } : null;
    // What each definition spells out of the call decides the flow (flowOf).
    const spells = callQuotes(quotes, argumentValues, context.userIndices.map((i) => context.messages[i]!.content).join('\n'));
    loo = toolDescriptionAttribution(attribution, ruleFromOptions({ ...options, userWeight: 1 }), options.tau - margin, options.noiseFloor, values).map((t) => {
      const spelled = spells.get(t.tool);
      return spelled ? { ...t, spells: spelled } : t;
    });
  }
  let attention: MindGuardVerdict | null = null;
  if (!tp.attention) unavailable.push('attention: turned off (toolPoisoning.attention = false)');
  else if (!capabilities.attention) {
    unavailable.push(`attention: ${capabilities.attentionUnavailable ?? 'the model exports no attention rows'}; MindGuard falls back to leave-one-out over tool descriptions`);
  } else if (scores.layout.tools.length === 0) {
    unavailable.push("attention: the rendering gives no token positions for the tool definitions; MindGuard falls back to leave-one-out over tool descriptions");
  } else if (!withAttention || !scores.attention || !scores.actionLayout) unavailable.push('attention: needs the template action text');
  else {
    const nameRows = scores.actionLayout.parts.filter((p) => p === 'name').length;
    attention = analyzeMindGuard(
      scores.attention.data,
      scores.attention.dims,
      {
        user: scores.layout.user.map((r) => ({ start: r.start, end: r.end })),
        tools: scores.layout.tools.map((t) => ({ tool: t.tool, ranges: [{ start: t.start, end: t.end }] })),
        toolResults: scores.layout.toolResults.map((r) => [{ start: r.start, end: r.end }]),
        invokedTool: context.action.name,
        controlTarget: [{ start: 0, end: Math.max(1, nameRows) }],
        dataTarget: scores.actionLayout.valueRows.map((r) => ({ start: r.start, end: r.end })),
      },
      mindguardOptions,
    );
  }
  return combineToolPoisoning(loo, attention, context.action.name, unavailable);
}

/** The failure policy: a malfunction while checking a privileged call gets `onError` (block by default); a non-privileged call is allowed. */
export function judgeFailure(error: unknown, context: Pick<StructuredContext, 'privileged'>, options: Pick<ResolvedGuardOptions, 'onError'>, extras: VerdictExtras = {}): Verdict {
  return failureVerdict(error, options, context.privileged, extras);
}
