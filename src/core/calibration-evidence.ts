/**
 * What a verdict says about how it would have gone at any operating point: its deltas, description scores, AIR
 * and the tool name's log-probability, read once from the verdict the guard returned (calibration.ts replays them).
 */
import { toolNameLogProbPerToken } from './familiarity.js';
import type { ResolvedGuardOptions } from './options.js';
import type { Verdict } from './verdict.js';

/** What decides a verdict at any operating point under the 'causalarmor' rule; plain data. */
export interface CalibrationEvidence {
  /**
   * Blocked whatever the operating point: the failure policy, or a description that sets an argument value
   * beyond the user's request (the value rule, `toolPoisoning.valueMargin`, which no threshold here moves).
   */
  forced: 'failure' | 'value' | null;
  /**
   * Each untrusted span's normalised delta (and its call sentences' where scored) above the noise floor, with the
   * user's delta it was judged against: the check's, or in a check judged in windows, that of the span's window.
   */
  spans: Array<{ delta: number; user: number }>;
  /** Each group's delta above the noise floor and the user's delta from the group's own baseline. */
  groups: Array<{ delta: number; user: number }>;
  groupMargin: number;
  /** Each tool description's leave-one-out score dT - dU above the noise floor, judged after a tool result: flagged iff > margin - tau. */
  descriptions: number[];
  /** The same, judged where no tool result was in the context (a first call, or a window without one): by the first-call margin. */
  firstCallDescriptions: number[];
  /**
   * MindGuard's largest AIR (flagged iff above the AIR threshold of the call's kind), or null: no attention,
   * or a check judged in windows whose AIR is at most `windowedAirThreshold` (no threshold lets it flag).
   */
  air: number | null;
  /** Made before any tool result: the first-call AIR threshold judges it. */
  firstCall: boolean;
  /** log P(the call's tool name | whole context) per name token (the least over windows), or null without a model pass or part labels: the unlikely-tool rule's value. */
  toolLogProb: number | null;
}

/** A labelled check for calibration: `real` marks a call the user's agent really made (not a planted case). */
export interface CalibrationCase {
  label: 'injected' | 'benign';
  real: boolean;
  /** Conversation the call came from, for per-conversation rates. */
  conversation: string;
  evidence: CalibrationEvidence;
}

/**
 * Whether each description of a check judged in windows was judged with the first-call margin: a window
 * without a tool result judges by it (judge.ts). Where the windows that judged a tool were of both kinds,
 * the kept entry (the window where it scored highest) came from the kind whose margin agrees with its flag
 * at the options it was judged with; where both agree, the check's own kind.
 */
function windowKinds(verdict: Verdict, options: Pick<ResolvedGuardOptions, 'toolPoisoning' | 'tau'>, beforeToolResults: boolean): (t: { tool: string; score: number; flagged: boolean }) => boolean {
  const judged = verdict.windows?.judged;
  if (judged === undefined) return () => beforeToolResults;
  const tp = options.toolPoisoning;
  return (t) => {
    const kinds = new Set(judged.filter((w) => w.tools.includes(t.tool)).map((w) => w.messages.length === 0));
    if (kinds.size === 1) return [...kinds][0]!;
    const flagsAt = (margin: number) => t.score > margin - options.tau;
    const first = flagsAt(tp.beforeToolResults.leaveOneOutMargin);
    return first === flagsAt(tp.leaveOneOutMargin) ? beforeToolResults : first === t.flagged;
  };
}

/** The evidence of a verdict the guard returned with `options`: its failure, deltas, description scores, AIR and the tool name's log-probability. */
export function evidenceOf(
  verdict: Verdict,
  options: Pick<ResolvedGuardOptions, 'toolPoisoning' | 'noiseFloor' | 'tau'>,
  beforeToolResults: boolean,
): CalibrationEvidence {
  const a = verdict.attribution;
  const tp = verdict.toolPoisoning;
  const floor = options.noiseFloor;
  const valueMargin = options.toolPoisoning.valueMargin;
  // The noise floor keeps a part whose removal does not lower the call from ever being flagged (attribution.ts).
  const tools = (tp?.leaveOneOut?.tools ?? []).filter((t) => t.normalizedDelta > floor);
  const setsValue = valueMargin !== null && tools.some((t) => typeof t.valueDelta === 'number' && t.valueDelta > valueMargin);
  const firstCallKind = windowKinds(verdict, options, beforeToolResults);
  const forced = verdict.reason === 'failure-policy' ? 'failure' : setsValue ? 'value' : null;
  const spans = (a?.spans ?? []).flatMap((s) => {
    // A window judges its spans against its own dU (window-verdict.ts keeps it on each span).
    const user = (s.userDeltas ?? a!.user.deltas).whole;
    return [
      ...(s.normalizedDelta > floor ? [{ delta: s.deltas.whole, user }] : []),
      ...(s.callSentences && s.callSentences.normalizedDelta > floor ? [{ delta: s.callSentences.deltas.whole, user }] : []),
    ];
  });
  // The windows of a check judged in several have their AIR threshold raised to windowedAirThreshold (window-verdict.ts):
  // below it no threshold flags. A check planned as one window (descriptions cut to fit) is judged at the usual ones.
  const air = tp?.attention ? tp.attention.score : null;
  const raised = tp?.attention !== undefined && tp.attention !== null && tp.attention.threshold >= options.toolPoisoning.windowedAirThreshold;
  const windowedOut = verdict.windows !== undefined && raised && air !== null && air <= options.toolPoisoning.windowedAirThreshold;
  return {
    forced,
    spans,
    // The noise floor holds for groups as for spans (attribution.ts): a group below it never flags.
    groups: (a?.groups ?? []).filter((g) => g.normalizedDelta > floor).map((g) => ({ delta: g.deltas.whole, user: g.userDeltas.whole })),
    groupMargin: a ? a.groupMargin : 0,
    descriptions: tools.filter((t) => !firstCallKind(t)).map((t) => t.score),
    firstCallDescriptions: tools.filter(firstCallKind).map((t) => t.score),
    air: windowedOut ? null : air,
    firstCall: beforeToolResults,
    toolLogProb: verdict.reason === 'model' ? toolNameLogProbPerToken(a) : null,
  };
}
