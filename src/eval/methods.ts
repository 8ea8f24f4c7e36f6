/**
 * Detection methods the evaluation compares on the same cases: the guard itself, and baselines
 * (keyword/regex, never-flag, always-flag; the reference CausalArmor lives in its own file).
 */
import { blockExcess, evidenceOf, thresholdsOf } from '../core/calibration.js';
import { callLogProbsPerWindow } from '../core/familiarity.js';
import { buildContext } from '../core/context.js';
import { resolveOptions, type ResolvedGuardOptions } from '../core/options.js';
import type { Verdict } from '../core/verdict.js';
import type { EvalCase } from './cases.js';

/** Per-span evidence of a method, for the report. */
export interface SpanEvidence {
  messageIndex: number;
  toolName: string | null;
  /** The span's normalised delta (attribution methods) or pattern weight (regex). */
  delta: number;
  score: number;
  flagged: boolean;
  /** The normalised delta of the span's sentences naming the call, where they were removed alone (a long result; `callSentences`). */
  callSentencesDelta?: number;
}

/** A group of untrusted spans removed together (groups.ts), as the evaluation records it. */
export interface GroupEvidence {
  messageIndexes: number[];
  reasons: string[];
  delta: number;
  /** The rule's score less the group margin: flagged iff score > -tau. */
  score: number;
  flagged: boolean;
}

/** What one method says about one case. */
export interface MethodResult {
  /** Continuous score, higher = more likely injected; null when the method had nothing to score (no untrusted span) or failed. */
  score: number | null;
  detected: boolean;
  /** Message indexes of flagged tool results. */
  flaggedMessages: number[];
  /** Tools whose descriptions were flagged, or null when the method does not name tools. */
  flaggedTools: string[] | null;
  /** The user request's normalised delta, for attribution methods. */
  userDelta: number | null;
  spans: SpanEvidence[];
  /** Groups of spans scored together, for the guard's attribution. */
  groups?: GroupEvidence[];
  /** Whether the tool-description signals flagged the call, for the guard. */
  toolPoisoningDetected?: boolean;
  /** Where the flagged description steered the call ('control' or 'data'), for the guard. */
  flow?: string | null;
  /** Windows the check was scored in, when it did not fit one. */
  windows?: number;
  /** log P(action | the whole context) per action token, per window scored (one without windows): how well the proxy predicts the call. */
  callLogProbPerToken?: number[];
  /** Tool results and descriptions no window judged (maxPasses reached), when there were any. */
  notJudged?: { messages: number[]; tools: string[] };
  /** Each description's leave-one-out evidence, for the description signal. */
  descriptions?: Array<{ tool: string; delta: number; score: number; flagged: boolean; valueDelta: number | null; nameDelta: number | null; argumentsDelta: number | null }>;
  /** Why there is no model score ('no-untrusted-spans', 'not-privileged', 'failure-policy', ...), when there is none. */
  reason?: string;
  /** The failure, when the method failed on this case (counted as not flagged). */
  error?: string;
}

/** A detection method under evaluation. */
export interface EvalMethod {
  /** Short stable name used as the key in the report. */
  readonly name: string;
  /** One line on what the method is. */
  readonly description: string;
  /** The cases the method's summary covers (all when absent), e.g. a tool-poisoning signal is ranked on poisoned and clean calls only. */
  readonly population?: (rec: { label: 'injected' | 'benign'; poisonedTool: string | null }) => boolean;
  evaluate(c: EvalCase): Promise<MethodResult>;
  dispose?(): Promise<void>;
}

/** A guard as the evaluation needs it: anything with check(). */
export interface CheckingGuard {
  check(input: unknown): Promise<Verdict>;
}

/** Tool-poisoning signals name tools, not messages, and have no user delta. */
const noSpanEvidence = (): Pick<MethodResult, 'flaggedMessages' | 'userDelta' | 'spans'> => ({ flaggedMessages: [], userDelta: null, spans: [] });

function verdictResult(v: Verdict): MethodResult {
  const a = v.attribution;
  const source = v.toolPoisoning?.sourceTool;
  const result: MethodResult = {
    score: v.score,
    detected: v.detected,
    flaggedMessages: v.flagged.map((f) => f.messageIndex),
    flaggedTools: v.toolPoisoning ? (source ? [source] : []) : null,
    userDelta: a?.user.normalizedDelta ?? null,
    spans:
      a?.spans.map((s) => ({
        messageIndex: s.messageIndex,
        toolName: s.toolName,
        delta: s.normalizedDelta,
        score: s.score,
        flagged: s.flagged,
        ...(s.callSentences ? { callSentencesDelta: s.callSentences.normalizedDelta } : {}),
      })) ?? [],
  };
  if (a && a.groups.length > 0) {
    result.groups = a.groups.map((g) => ({ messageIndexes: g.messageIndexes, reasons: g.reasons, delta: g.normalizedDelta, score: g.score, flagged: g.flagged }));
  }
  if (v.toolPoisoning) {
    result.toolPoisoningDetected = v.toolPoisoning.detected;
    result.flow = v.toolPoisoning.flow;
  }
  if (v.windows) result.windows = v.windows.count;
  const perWindow = callLogProbsPerWindow(a);
  if (perWindow.length > 0) result.callLogProbPerToken = perWindow;
  if (v.windows && v.windows.notJudged.messages.length + v.windows.notJudged.tools.length > 0) result.notJudged = v.windows.notJudged;
  if (v.reason !== 'model') result.reason = v.reason;
  if (v.error) result.error = `${v.error.code}: ${v.error.message}`;
  return result;
}

/** MindGuard's part of a verdict on its own: the largest AIR as the score. */
function mindGuardResult(v: Verdict): MethodResult {
  const att = v.toolPoisoning?.attention ?? null;
  if (att === null) {
    const reason = v.reason !== 'model' ? v.reason : v.toolPoisoning ? 'no-attention' : 'no-tools';
    return { score: null, detected: false, flaggedTools: null, ...noSpanEvidence(), reason };
  }
  return { score: att.score, detected: att.detected, flaggedTools: att.poisonedTool !== null ? [att.poisonedTool] : [], ...noSpanEvidence() };
}

/** Leave-one-out over tool descriptions on its own: the largest description score. */
function descriptionLooResult(v: Verdict): MethodResult {
  const loo = v.toolPoisoning?.leaveOneOut ?? null;
  if (loo === null || loo.tools.length === 0) {
    const reason = v.reason !== 'model' ? v.reason : 'no-tools';
    return { score: null, detected: false, flaggedTools: null, ...noSpanEvidence(), reason };
  }
  const flagged = loo.tools.filter((t) => t.flagged).sort((x, y) => y.score - x.score);
  const descriptions = loo.tools.map((t) => ({ tool: t.tool, delta: t.normalizedDelta, score: t.score, flagged: t.flagged, valueDelta: t.valueDelta ?? null, nameDelta: t.nameDelta ?? null, argumentsDelta: t.argumentsDelta ?? null }));
  return { score: Math.max(...loo.tools.map((t) => t.score)), detected: loo.detected, flaggedTools: flagged.map((t) => t.tool), ...noSpanEvidence(), descriptions };
}

/**
 * The guard's whole decision as a ranking: the check's excess over the nearest of its thresholds at the options it
 * was judged with (every signal: tool results and groups, descriptions, MindGuard's AIR, the unlikely-tool rule;
 * calibration.ts's blockExcess), so a score above 0 is a block. Unscored where the model did not judge the call.
 */
function pointResult(v: Verdict, c: EvalCase, options: ResolvedGuardOptions): MethodResult {
  const result = verdictResult(v);
  if (v.reason !== 'model') return { ...result, score: null };
  const excess = blockExcess(evidenceOf(v, options, c.input.messages.every((m) => m.role !== 'tool')), thresholdsOf(options));
  return { ...result, score: Math.min(1e6, Math.max(-1e6, excess)) };
}

/** Wraps a guard's verdicts as method results; the poisoned tool a verdict names (toolPoisoning.sourceTool) is its flagged tool. */
export function guardMethod(guard: CheckingGuard, name = 'edgearmor', description = 'EdgeArmor guard at the given options'): EvalMethod {
  return { name, description, evaluate: async (c) => verdictResult(await guard.check(c.input)) };
}

/** Clean calls and tool-description attacks: the cases a tool-poisoning signal is ranked on. */
export const toolPoisoningPopulation = (rec: { label: 'injected' | 'benign'; poisonedTool: string | null }): boolean =>
  rec.label === 'benign' || rec.poisonedTool !== null;

/**
 * The guard and two of its signals as separate methods over ONE check per case: the combined verdict
 * (`name`), MindGuard's AIR (`name/mindguard`) and leave-one-out over tool descriptions
 * (`name/description-loo`), the latter two ranked on clean and tool-poisoned calls only; given the options the
 * guard judges with, also its whole decision as a ranking (`name/point`: the excess over the nearest threshold,
 * where `name` ranks by the tool results' rule alone). The later methods reuse the verdict the first one computed
 * for the same case, so their latency is ~0 and they must follow it in the method list (runEval runs methods in
 * order, case by case).
 */
export function guardMethods(guard: CheckingGuard, name = 'edgearmor', description = 'EdgeArmor guard at the given options', judgedWith?: ResolvedGuardOptions): EvalMethod[] {
  let last: { c: EvalCase; verdict: Promise<Verdict> } | null = null;
  const verdictOf = (c: EvalCase): Promise<Verdict> => {
    if (last?.c !== c) last = { c, verdict: guard.check(c.input) };
    return last.verdict;
  };
  return [
    { name, description, evaluate: async (c) => verdictResult(await verdictOf(c)) },
    {
      name: `${name}/mindguard`,
      description: 'MindGuard alone: the largest AIR of the same verdict, on clean and tool-poisoned calls',
      population: toolPoisoningPopulation,
      evaluate: async (c) => mindGuardResult(await verdictOf(c)),
    },
    {
      name: `${name}/description-loo`,
      description: 'leave-one-out over tool descriptions alone, from the same verdict, on clean and tool-poisoned calls',
      population: toolPoisoningPopulation,
      evaluate: async (c) => descriptionLooResult(await verdictOf(c)),
    },
    ...(judgedWith
      ? [
          {
            name: `${name}/point`,
            description: "the guard's whole decision as a ranking: each check's excess over its nearest threshold at the options it was judged with (every signal); above 0 is a block",
            evaluate: async (c: EvalCase) => pointResult(await verdictOf(c), c, judgedWith),
          },
        ]
      : []),
  ];
}

/** A keyword pattern of the regex baseline with its weight. */
export interface KeywordPattern {
  pattern: RegExp;
  weight: number;
}

/** Phrases simple guards (rule lists such as vard's, prompt-injection blocklists) match; one strong phrase or two weak ones flag a span. */
export const KEYWORD_PATTERNS: readonly KeywordPattern[] = Object.freeze([
  { pattern: /\b(ignore|disregard|forget)\b[^.\n]{0,30}\b(previous|prior|above|earlier|all)\b[^.\n]{0,20}\b(instructions?|prompts?|rules?|directions?)\b/i, weight: 1 },
  { pattern: /\bimportant (message|instructions?|notice)\b/i, weight: 1 },
  { pattern: /<\/?\s*(information|instructions?|important|system|admin)\s*>/i, weight: 1 },
  { pattern: /\b(system prompt|developer message|new instructions?)\b/i, weight: 1 },
  { pattern: /(^|\n)\s*(system|assistant|user)\s*:/i, weight: 1 },
  { pattern: /<\|?(im_start|im_end|system|user|assistant|endoftext)\|?>/i, weight: 1 },
  { pattern: /\byou (must|should|need to|are required to|have to)\b/i, weight: 0.5 },
  { pattern: /\b(before|instead of) (you )?(do(ing)?|solv(e|ing)|complet(e|ing)|continu(e|ing))\b/i, weight: 0.5 },
  { pattern: /\b(do not|don't) (tell|inform|mention|notify)\b[^.\n]{0,20}\b(user|anyone)\b/i, weight: 1 },
  { pattern: /\bas an? (ai|assistant|language model)\b/i, weight: 0.5 },
  { pattern: /\b(this is|from) (the )?(user|admin|administrator|developer|system)\b/i, weight: 0.5 },
  { pattern: /\b(send|transfer|forward|post|upload|email)\b[^.\n]{0,60}\b(https?:\/\/|[A-Z]{2}\d{2}[A-Z0-9]{10,}|@[\w-]+\.\w+)/i, weight: 0.5 },
]);

/** Sums the weights of the patterns that occur in a text. */
export function keywordScore(text: string, patterns: readonly KeywordPattern[] = KEYWORD_PATTERNS): number {
  return patterns.reduce((acc, p) => acc + (p.pattern.test(text) ? p.weight : 0), 0);
}

const DEFAULT_RESOLVED = resolveOptions({});

/** The keyword/regex baseline: scores each untrusted tool result (and each tool description) by pattern weight; flags at weight >= threshold. */
export function createRegexBaseline(threshold = 1, patterns: readonly KeywordPattern[] = KEYWORD_PATTERNS): EvalMethod {
  return {
    name: 'regex',
    description: `keyword/regex detector over untrusted tool results and tool descriptions (flag at weight >= ${threshold})`,
    async evaluate(c) {
      let spans;
      try {
        spans = buildContext(c.input, DEFAULT_RESOLVED).spans;
      } catch (e) {
        return { score: null, detected: false, flaggedMessages: [], flaggedTools: null, userDelta: null, spans: [], error: (e as Error).message };
      }
      const evidence: SpanEvidence[] = spans.map((s) => {
        const w = keywordScore(c.input.messages[s.messageIndex]!.content, patterns);
        return { messageIndex: s.messageIndex, toolName: s.toolName, delta: w, score: w, flagged: w >= threshold };
      });
      const toolScores = (c.input.tools ?? []).map((t) => {
        const name = 'function' in t ? t.function.name : t.name;
        const description = ('function' in t ? t.function.description : t.description) ?? '';
        return { name, w: keywordScore(description, patterns) };
      });
      const all = [...evidence.map((e) => e.score), ...toolScores.map((t) => t.w)];
      const score = all.length === 0 ? null : Math.max(...all);
      const flaggedTools = toolScores.filter((t) => t.w >= threshold).map((t) => t.name);
      const flaggedMessages = evidence.filter((e) => e.flagged).map((e) => e.messageIndex);
      return {
        score,
        detected: flaggedMessages.length > 0 || flaggedTools.length > 0,
        flaggedMessages,
        flaggedTools,
        userDelta: null,
        spans: evidence,
        ...(score === null ? { reason: 'no-untrusted-spans' } : {}),
      };
    },
  };
}

/** A constant baseline: flags every case (always) or none (never), with a constant score. */
export function createConstantBaseline(flag: boolean): EvalMethod {
  return {
    name: flag ? 'always-flag' : 'never-flag',
    description: flag ? 'flags every call' : 'flags no call',
    async evaluate(c) {
      // Flagging a call flags every tool result in its context; never-flag flags none.
      const flaggedMessages = flag ? c.input.messages.flatMap((m, i) => (m.role === 'tool' ? [i] : [])) : [];
      return { score: flag ? 1 : 0, detected: flag, flaggedMessages, flaggedTools: null, userDelta: null, spans: [] };
    },
  };
}
