/**
 * Tool poisoning (instructions hidden in a registered tool's description): two signals, one verdict.
 *
 * 1. Leave-one-out over tool descriptions: removing a description is a causal test of its
 *    influence, judged like a tool-result span against the user's request (dT > dU - tau).
 * 2. MindGuard: the decision-dependence graph over the proxy's attention (core/mindguard).
 * The combined verdict flags when either signal flags and names the tool whichever found it.
 */
import type { AttributionResult, DetectionRule, VariantAttribution } from './attribution.js';
import type { FlowKind, MindGuardVerdict } from './mindguard/types.js';
import { jsonLeaves } from './sentence-cut.js';
import type { JsonValue } from './types.js';

/** Leave-one-out evidence for one registered tool's description. */
export interface ToolDescriptionAttribution {
  tool: string;
  logProb: number;
  rawDelta: number;
  normalizedDelta: number;
  /** The delta over the tool-name tokens alone, or null without part labels (see DeltaParts). */
  nameDelta?: number | null;
  /** The delta over the argument tokens alone, or null without part labels or arguments. */
  argumentsDelta?: number | null;
  /**
   * The most this description explains one argument value beyond what the user's request explains of it:
   * max over values of (its mean token delta without the description - max(0, without the request)); null
   * without value positions. A description that sets a value the user never asked for (A2) shows here
   * when the whole-call delta averages it away. Only the values its definition quotes count (quotedValues);
   * null when it quotes none or without value positions.
   */
  valueDelta?: number | null;
  /** What this tool's definition spells out of the call (callQuotes), for the flow; absent when not computed. */
  spells?: CallQuotes;
  score: number;
  flagged: boolean;
}

/** The tool-poisoning part of a verdict. */
export interface ToolPoisoningVerdict {
  detected: boolean;
  /** The poisoned tool, from the leave-one-out signal when it flags, else from MindGuard. */
  sourceTool: string | null;
  /**
   * 'control' when the description chose the tool that is called (A1), 'data' when it only set arguments of
   * a call the user's request explains (A2); see {@link flowOf}.
   */
  flow: FlowKind | null;
  /** MindGuard's largest AIR, or null without attention. */
  air: number | null;
  /** Continuous score: the larger of the leave-one-out score and (AIR - threshold). */
  score: number | null;
  leaveOneOut: { detected: boolean; tools: ToolDescriptionAttribution[] } | null;
  attention: MindGuardVerdict | null;
  /** Why a signal did not run (e.g. the model has no attention output, or tool definitions were truncated away). */
  unavailable: string[];
}

/** The argument values of a call, in the order its JSON writes them (one value when the arguments are not an object). */
export function argumentValueList(args: unknown): unknown[] {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return [args];
  return Object.values(args as Record<string, unknown>).filter((v) => v !== undefined);
}

/** Fewest characters of a value a tool definition must quote for the value rule to judge that definition on it. */
export const MIN_QUOTED_VALUE_CHARS = 4;

/**
 * For each tool, the indexes of the call's argument values that its definition (description and parameter
 * schema) quotes: a string or number (or one inside a list or object) of at least MIN_QUOTED_VALUE_CHARS characters
 * found in it, case aside.
 * An argument-only poisoning has to give its value; a description that documents how to fill its own
 * parameters (a count, a flag, the model's own text) quotes none of them.
 */
export function quotedValues(tools: ReadonlyArray<{ name: string; description: string; parameters?: unknown }>, values: readonly unknown[]): Map<string, Set<number>> {
  const texts = values.map(quotableTexts);
  return new Map(
    tools.map((t) => {
      const definition = `${t.description}\n${JSON.stringify(t.parameters ?? {})}`.toLowerCase();
      return [t.name, new Set(texts.flatMap((quoted, i) => (quoted.some((text) => definition.includes(text)) ? [i] : [])))];
    }),
  );
}

/** A value's strings and numbers long enough to quote, lower-cased: a list or object value is quoted when one of them is (a planted address in a list of recipients). */
function quotableTexts(value: unknown): string[] {
  return jsonLeaves(value as JsonValue)
    .map((text) => text.trim().toLowerCase())
    .filter((text) => text.length >= MIN_QUOTED_VALUE_CHARS);
}

/** What one tool definition spells out of the call (see {@link flowOf}). */
export interface CallQuotes {
  /** It quotes a value of the call that the user's turns do not contain: it can have set that value. */
  untypedValue: boolean;
  /** It quotes every value of the call long enough to quote (true for a call with none): it can have written the whole call. */
  everyValue: boolean;
}

/** For each tool, what its definition spells out of the call: `quoted` is quotedValues(tools, values), `userText` the user's turns. */
export function callQuotes(quoted: ReadonlyMap<string, ReadonlySet<number>>, values: readonly unknown[], userText: string): Map<string, CallQuotes> {
  const texts = values.map(quotableTexts);
  const quotable = texts.flatMap((t, i) => (t.length > 0 ? [i] : []));
  const user = userText.toLowerCase();
  const typed = new Set(texts.flatMap((t, i) => (t.some((text) => user.includes(text)) ? [i] : [])));
  return new Map(
    [...quoted].map(([tool, indexes]) => [
      tool,
      { untypedValue: [...indexes].some((i) => !typed.has(i)), everyValue: quotable.every((i) => indexes.has(i)) },
    ]),
  );
}

/** Where the call's argument values sit among the action's tokens, for the value rule; `value` indexes argumentValueList. */
export interface ValueRows {
  rows: ReadonlyArray<{ start: number; end: number; value?: number }>;
  margin: number;
  /** When given, a description is judged only on the values its definition quotes (quotedValues); else on every value. */
  quotes?: ReadonlyMap<string, ReadonlySet<number>>;
}

/** Judges each `no-tool:<name>` variant against the user's request with the same rule as spans. */
export function toolDescriptionAttribution(
  attribution: Pick<AttributionResult, 'variants' | 'user'>,
  rule: DetectionRule,
  tau: number,
  noiseFloor = -Infinity,
  values: ValueRows | null = null,
): ToolDescriptionAttribution[] {
  const full = attribution.variants.find((v) => v.kind === 'full')?.tokenLogProbs;
  const noUser = attribution.variants.find((v) => v.kind === 'no-user')?.tokenLogProbs;
  const rows = values && full && noUser ? values.rows.filter((r) => r.end > r.start && r.end <= full.length) : [];
  const meanDelta = (variant: readonly number[], r: { start: number; end: number }) => {
    let sum = 0;
    for (let i = r.start; i < r.end; i++) sum += full![i]! - variant[i]!;
    return sum / (r.end - r.start);
  };
  const userValues = rows.map((r) => Math.max(0, meanDelta(noUser!, r)));
  return attribution.variants
    .filter((v: VariantAttribution) => v.kind === 'no-tool')
    .map((v) => {
      const tool = v.id.slice('no-tool:'.length);
      const out = rule({ user: attribution.user.deltas, span: v.deltas, tau });
      const quoted = values?.quotes?.get(tool);
      const judged = rows.flatMap((r, k) => (values?.quotes === undefined || (r.value !== undefined && quoted?.has(r.value)) ? [meanDelta(v.tokenLogProbs, r) - userValues[k]!] : []));
      const valueDelta = judged.length > 0 ? Math.max(...judged) : null;
      const setsValue = valueDelta !== null && values !== null && valueDelta > values.margin;
      return {
        tool,
        logProb: v.logProb,
        rawDelta: v.rawDelta,
        normalizedDelta: v.normalizedDelta,
        nameDelta: v.deltas.name,
        argumentsDelta: v.deltas.arguments,
        valueDelta,
        score: out.score,
        // The noise floor (attribution.ts): only a description whose removal lowers the call can have steered it.
        flagged: (out.flagged || setsValue) && v.normalizedDelta > noiseFloor,
      };
    });
}

/**
 * Where the poisoned description steered the call: control when it chose the tool (A1), data when it only set
 * arguments of a call the user asked for (A2). What the definition spells out of the call decides, when known:
 * - another tool's description: control when it quotes every value of the call (it wrote the whole call: the
 *   tool and its arguments), data when it quotes only some (a lookalike that sets one value of the user's call);
 * - the invoked tool's own description: data when it quotes a value the user never typed (it set that value),
 *   control when it quotes none (it can only have made the agent pick it: a lookalike or a self-promotion).
 * The quotes decide only for a description leave-one-out flagged: a tool MindGuard names alone may have steered
 * the call through its results, whose text is not the definition's.
 * Chosen on mcp-choose and generator validation over the proxy's part deltas (docs/options.md, "The flow a
 * verdict reports"): those are noise on tools the proxy never saw. Without quotes (an older caller): another tool's description is control;
 * the own description is control when removing it costs the name tokens more than the argument tokens, then
 * MindGuard's attention target when it names the same tool, else data.
 */
export function flowOf(
  sourceTool: string | null,
  invokedTool: string,
  loo: Pick<ToolDescriptionAttribution, 'nameDelta' | 'argumentsDelta' | 'spells' | 'flagged'> | null,
  attention: Pick<MindGuardVerdict, 'poisonedTool' | 'flow'> | null,
): FlowKind | null {
  if (sourceTool === null) return null;
  // The quotes speak for a description that leave-one-out flagged; a tool MindGuard names alone may have steered the call through its results.
  const spells = loo?.flagged ? loo.spells : undefined;
  if (spells) {
    if (sourceTool !== invokedTool) return spells.everyValue ? 'control' : 'data';
    return spells.untypedValue ? 'data' : 'control';
  }
  if (sourceTool !== invokedTool) return 'control';
  const name = loo?.nameDelta ?? null;
  if (name !== null) return name > Math.max(0, loo?.argumentsDelta ?? 0) ? 'control' : 'data';
  if (attention?.poisonedTool === sourceTool && attention.flow !== null) return attention.flow;
  return 'data';
}

/** Combines the two signals into one tool-poisoning verdict. */
export function combineToolPoisoning(
  loo: ToolDescriptionAttribution[] | null,
  attention: MindGuardVerdict | null,
  invokedTool: string,
  unavailable: string[],
): ToolPoisoningVerdict {
  const flaggedLoo = (loo ?? []).filter((t) => t.flagged).sort((a, b) => b.score - a.score);
  const looTop = flaggedLoo[0];
  const looDetected = looTop !== undefined;
  const attDetected = attention?.detected ?? false;
  const sourceTool = looTop?.tool ?? (attDetected ? attention!.poisonedTool : null);
  const flow = flowOf(sourceTool, invokedTool, (loo ?? []).find((t) => t.tool === sourceTool) ?? null, attDetected ? attention : null);
  const scores: number[] = [];
  if (loo && loo.length > 0) scores.push(Math.max(...loo.map((t) => t.score)));
  if (attention) scores.push(attention.score - attention.threshold);
  return {
    detected: looDetected || attDetected,
    sourceTool,
    flow,
    air: attention ? attention.score : null,
    score: scores.length > 0 ? Math.max(...scores) : null,
    leaveOneOut: loo ? { detected: looDetected, tools: loo } : null,
    attention,
    unavailable,
  };
}
