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

/** Leave-one-out evidence for one registered tool's description. */
export interface ToolDescriptionAttribution {
  tool: string;
  logProb: number;
  rawDelta: number;
  normalizedDelta: number;
  score: number;
  flagged: boolean;
}

/** The tool-poisoning part of a verdict. */
export interface ToolPoisoningVerdict {
  detected: boolean;
  /** The poisoned tool, from the leave-one-out signal when it flags, else from MindGuard. */
  sourceTool: string | null;
  /** 'control' (hijacked tool choice, A1) or 'data' (manipulated arguments, A2); from MindGuard, else inferred. */
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

/** Judges each `no-tool:<name>` variant against the user's request with the same rule as spans. */
export function toolDescriptionAttribution(
  attribution: Pick<AttributionResult, 'variants' | 'user'>,
  rule: DetectionRule,
  tau: number,
): ToolDescriptionAttribution[] {
  return attribution.variants
    .filter((v: VariantAttribution) => v.kind === 'no-tool')
    .map((v) => {
      const out = rule({ user: attribution.user.deltas, span: v.deltas, tau });
      return {
        tool: v.id.slice('no-tool:'.length),
        logProb: v.logProb,
        rawDelta: v.rawDelta,
        normalizedDelta: v.normalizedDelta,
        score: out.score,
        flagged: out.flagged,
      };
    });
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
  // A flagged description of the invoked tool itself steers its arguments (A2); another tool's steers the choice (A1).
  const flow: FlowKind | null =
    attDetected && attention!.poisonedTool === sourceTool ? attention!.flow : sourceTool === null ? null : sourceTool === invokedTool ? 'data' : 'control';
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
