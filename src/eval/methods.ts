/**
 * Detection methods the evaluation compares on the same cases: the guard itself, and baselines
 * (keyword/regex, never-flag, always-flag; the reference CausalArmor lives in its own file).
 */
import { buildContext } from '../core/context.js';
import { resolveOptions } from '../core/options.js';
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
  evaluate(c: EvalCase): Promise<MethodResult>;
  dispose?(): Promise<void>;
}

/** A guard as the evaluation needs it: anything with check(). */
export interface CheckingGuard {
  check(input: unknown): Promise<Verdict>;
}

/** Wraps a guard's verdicts as method results; tool names are read from a verdict's optional `flaggedTools` (MindGuard) when present. */
export function guardMethod(guard: CheckingGuard, name = 'edgearmor', description = 'EdgeArmor guard at the given options'): EvalMethod {
  return {
    name,
    description,
    async evaluate(c) {
      const v = await guard.check(c.input);
      const a = v.attribution;
      const tools = (v as Verdict & { flaggedTools?: unknown }).flaggedTools;
      const result: MethodResult = {
        score: v.score,
        detected: v.detected,
        flaggedMessages: v.flagged.map((f) => f.messageIndex),
        flaggedTools: Array.isArray(tools) ? tools.filter((t): t is string => typeof t === 'string') : null,
        userDelta: a?.user.normalizedDelta ?? null,
        spans: a?.spans.map((s) => ({ messageIndex: s.messageIndex, toolName: s.toolName, delta: s.normalizedDelta, score: s.score, flagged: s.flagged })) ?? [],
      };
      if (v.reason !== 'model') result.reason = v.reason;
      if (v.error) result.error = `${v.error.code}: ${v.error.message}`;
      return result;
    },
  };
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
