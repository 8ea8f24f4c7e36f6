/**
 * Which parts a verdict names. The rule flags a part (a tool result, a group of them, a tool description)
 * against the user's request: when the request explains the call less than nothing (dU < 0), a part whose
 * removal lowers the call by a hair clears the bar beside the one that drove it. The demo's injection named
 * three clean descriptions at deltas of 0.001-0.012 beside the injected result at 1.64. A part is named only
 * when its delta is at least `relativeFloor` times the strongest flagged part's, and a group only when it moves
 * the call more than its members named on their own. The decision is not changed: the strongest part is always
 * named, and MindGuard's signal is untouched.
 */
import { flaggedSpansOf, type AttributionResult, type SpanAttribution } from './attribution.js';
import { combineToolPoisoning, type ToolDescriptionAttribution } from './tool-poisoning.js';
import type { Verdict } from './verdict.js';

/** A flagged span's delta: the larger of the whole result's and, when they flag it, its call sentences'. */
function spanStrength(s: SpanAttribution): number {
  return Math.max(s.normalizedDelta, s.callSentences?.flagged ? s.callSentences.normalizedDelta : -Infinity);
}

/** The verdict with only the parts at least `share` of the strongest flagged part named; the verdict itself when none is dropped. */
export function nameStrongParts(verdict: Verdict, share: number, invokedTool: string): Verdict {
  const attribution = verdict.attribution;
  const described = verdict.toolPoisoning?.leaveOneOut?.tools ?? [];
  if (share <= 0 || attribution === null) return verdict;
  const strengths = [
    ...attribution.spans.filter((s) => s.flagged).map(spanStrength),
    ...attribution.groups.filter((g) => g.flagged).map((g) => g.normalizedDelta),
    ...described.filter((t) => t.flagged).map((t) => t.normalizedDelta),
  ];
  const strongest = Math.max(...strengths);
  if (!(strongest > 0)) return verdict;
  const bar = share * strongest;
  const weak = (delta: number) => delta < bar;
  const spans = attribution.spans.map((s): SpanAttribution => {
    if (!s.flagged || !weak(spanStrength(s))) return s;
    return { ...s, flagged: false, ...(s.callSentences ? { callSentences: { ...s.callSentences, flagged: false } } : {}) };
  });
  // A group names its members only when it moves the call more than its members named on their own do: removing
  // an injected result with a clean one beside it is no evidence against the clean one.
  const namedAlone = (ids: readonly number[]) => Math.max(...spans.filter((s) => s.flagged && ids.includes(s.spanId)).map(spanStrength));
  const groups = attribution.groups.map((g) => (g.flagged && (weak(g.normalizedDelta) || g.normalizedDelta <= namedAlone(g.spanIds)) ? { ...g, flagged: false } : g));
  if (!strengths.some(weak) && groups.every((g, i) => g === attribution.groups[i])) return verdict;
  const flagged = flaggedSpansOf(spans, groups);
  const named: AttributionResult = { ...attribution, spans, groups, flagged, detected: flagged.length > 0 };
  const out: Verdict = { ...verdict, attribution: named, flagged };
  const tp = verdict.toolPoisoning;
  if (tp?.leaveOneOut) {
    const kept = described.map((t): ToolDescriptionAttribution => (t.flagged && weak(t.normalizedDelta) ? { ...t, flagged: false } : t));
    out.toolPoisoning = combineToolPoisoning(kept, tp.attention, invokedTool, tp.unavailable);
  }
  return out;
}
