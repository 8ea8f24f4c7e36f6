/**
 * The operating point (userWeight, tau) chosen on labelled checks, from the evidence their verdicts
 * already carry: a verdict's deltas say how it would have gone at any other weight and margin, so one
 * scoring pass calibrates every point. `edgearmor adapt` uses it on held-out traffic with planted
 * injections; it is pure, so the same numbers come out wherever it runs.
 */
import { InvalidOptionsError } from './errors.js';
import { rocAuc } from './metrics.js';
import type { ResolvedGuardOptions } from './options.js';
import type { Verdict } from './verdict.js';

/** What decides a verdict at any (userWeight, tau) under the 'causalarmor' rule; plain data. */
export interface CalibrationEvidence {
  /** Blocked whatever the operating point: the failure policy, or MindGuard's attention signal (its own threshold). */
  forced: 'failure' | 'attention' | null;
  /** The user request's normalised delta, or null when no attribution ran (no untrusted span, not privileged). */
  dU: number | null;
  /** Each untrusted span's normalised delta. */
  spans: number[];
  /** Each group's delta and the user's delta from the group's own baseline. */
  groups: Array<{ delta: number; user: number }>;
  groupMargin: number;
  /** Each tool description's leave-one-out score less its margin (dT - dU - margin): flagged iff > -tau. */
  descriptions: number[];
}

/** A labelled check for calibration: `real` marks a call the user's agent really made (not a planted case). */
export interface CalibrationCase {
  label: 'injected' | 'benign';
  real: boolean;
  /** Conversation the call came from, for per-conversation rates. */
  conversation: string;
  evidence: CalibrationEvidence;
}

/** The evidence of a verdict the guard returned with `options` (its failure, attention flag and deltas). */
export function evidenceOf(verdict: Verdict, options: Pick<ResolvedGuardOptions, 'toolPoisoning'>, beforeToolResults: boolean): CalibrationEvidence {
  const a = verdict.attribution;
  const tp = verdict.toolPoisoning;
  const margin = beforeToolResults ? options.toolPoisoning.beforeToolResults.leaveOneOutMargin : options.toolPoisoning.leaveOneOutMargin;
  const forced = verdict.reason === 'failure-policy' ? 'failure' : tp?.attention?.detected ? 'attention' : null;
  return {
    forced,
    dU: a ? a.user.deltas.whole : null,
    spans: a ? a.spans.map((s) => s.deltas.whole) : [],
    groups: a ? a.groups.map((g) => ({ delta: g.deltas.whole, user: g.userDeltas.whole })) : [],
    groupMargin: a ? a.groupMargin : 0,
    descriptions: (tp?.leaveOneOut?.tools ?? []).map((t) => t.score - margin),
  };
}

/** The largest rule score of a check at weight w (a span's dS - w dU, a group's less its margin, a description's less its margin); -Infinity when nothing was scored. */
export function blockMargin(e: CalibrationEvidence, userWeight: number): number {
  let m = -Infinity;
  if (e.dU !== null) {
    for (const s of e.spans) m = Math.max(m, s - userWeight * e.dU);
  }
  for (const g of e.groups) m = Math.max(m, g.delta - userWeight * g.user - e.groupMargin);
  for (const d of e.descriptions) m = Math.max(m, d);
  return m;
}

/** Whether the check is blocked at (userWeight, tau): flagged iff a score > -tau (strict, as the rule). */
export function blockedAt(e: CalibrationEvidence, userWeight: number, tau: number): boolean {
  return e.forced !== null || blockMargin(e, userWeight) > -tau;
}

/** Rates of one operating point over labelled checks. */
export interface OperatingPoint {
  userWeight: number;
  tau: number;
  /** Injected calls blocked. */
  tpr: number;
  /** Benign checks blocked (the agent's real calls and planted ignored injections). */
  fpr: number;
  /** Benign checks blocked at any point (the failure policy, MindGuard's attention): what recalibration cannot lower. */
  forcedFpr: number;
  /** The agent's real calls blocked. */
  realFpr: number;
  /** Conversations with at least one real call blocked, of those with real calls. */
  conversationFpr: number;
  /** ROC-AUC of injected checks against the real calls, scoring by the block margin at this weight. */
  rocAuc: number | null;
  injected: number;
  benign: number;
}

const rate = (n: number, d: number): number => (d === 0 ? 0 : n / d);

/** The rates of (userWeight, tau) over the cases. */
export function operatingPoint(cases: readonly CalibrationCase[], userWeight: number, tau: number): OperatingPoint {
  const injected = cases.filter((c) => c.label === 'injected');
  const benign = cases.filter((c) => c.label === 'benign');
  const real = benign.filter((c) => c.real);
  const blocked = (c: CalibrationCase): boolean => blockedAt(c.evidence, userWeight, tau);
  const conversations = new Map<string, boolean>();
  for (const c of real) conversations.set(c.conversation, (conversations.get(c.conversation) ?? false) || blocked(c));
  const score = (c: CalibrationCase): number => (c.evidence.forced !== null ? Number.MAX_VALUE : Math.max(-1e6, blockMargin(c.evidence, userWeight)));
  return {
    userWeight,
    tau,
    tpr: rate(injected.filter(blocked).length, injected.length),
    fpr: rate(benign.filter(blocked).length, benign.length),
    forcedFpr: rate(benign.filter((c) => c.evidence.forced !== null).length, benign.length),
    realFpr: rate(real.filter(blocked).length, real.length),
    conversationFpr: rate([...conversations.values()].filter(Boolean).length, conversations.size),
    rocAuc: rocAuc([...injected, ...real].map((c) => ({ score: score(c), positive: c.label === 'injected' }))),
    injected: injected.length,
    benign: benign.length,
  };
}

/** What {@link chooseOperatingPoint} searches. */
export interface CalibrationSearch {
  /** Most benign checks blocked, as a fraction (the agent's real calls and ignored injections together). */
  targetFpr: number;
  /** The user weights tried. */
  userWeights: readonly number[];
  /** Preferred among equals: the guard's current weight. */
  preferredUserWeight: number;
}

export const DEFAULT_CALIBRATION_SEARCH: Readonly<CalibrationSearch> = Object.freeze({
  targetFpr: 0.03,
  userWeights: Object.freeze([0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3]),
  preferredUserWeight: 2,
});

/** Rounds a threshold up to 1e-3, so the rounded tau blocks no more than the exact one. */
const ceil3 = (x: number): number => Math.ceil(x * 1000 - 1e-9) / 1000;

/**
 * For each weight, the smallest margin threshold that keeps benign blocks within the target (forced
 * blocks count against it), then the weight whose point blocks the most injected calls (ties: fewer
 * benign blocks, then the preferred weight). Returns the chosen point and every weight's best.
 */
export function chooseOperatingPoint(cases: readonly CalibrationCase[], search: CalibrationSearch = DEFAULT_CALIBRATION_SEARCH): { chosen: OperatingPoint; candidates: OperatingPoint[] } {
  if (!(search.targetFpr >= 0 && search.targetFpr < 1)) {
    throw new InvalidOptionsError(`targetFpr: received ${search.targetFpr}; allowed: a fraction from 0 up to (not including) 1.`, { option: 'targetFpr' });
  }
  const benign = cases.filter((c) => c.label === 'benign');
  if (benign.length === 0 || !cases.some((c) => c.label === 'injected')) {
    throw new InvalidOptionsError('calibration needs benign and injected checks; received only one kind.', { option: 'cases' });
  }
  const candidates = search.userWeights.map((w) => {
    const forced = benign.filter((c) => c.evidence.forced !== null).length;
    const margins = benign
      .filter((c) => c.evidence.forced === null)
      .map((c) => blockMargin(c.evidence, w))
      .filter((m) => Number.isFinite(m))
      .sort((a, b) => b - a);
    const budget = Math.floor(search.targetFpr * benign.length + 1e-9) - forced;
    // Block the `budget` largest benign margins at most: threshold at the next one (strict >).
    const threshold = margins.length === 0 ? 0 : budget < 0 ? margins[0]! : budget >= margins.length ? margins[margins.length - 1]! - 0.001 : margins[budget]!;
    return operatingPoint(cases, w, -ceil3(threshold));
  });
  const better = (a: OperatingPoint, b: OperatingPoint): boolean =>
    a.tpr !== b.tpr ? a.tpr > b.tpr : a.fpr !== b.fpr ? a.fpr < b.fpr : Math.abs(a.userWeight - search.preferredUserWeight) < Math.abs(b.userWeight - search.preferredUserWeight);
  const chosen = candidates.reduce((best, p) => (better(p, best) ? p : best));
  return { chosen, candidates };
}

const fmt = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * How an adapted model's point is worse than the base's on the same held-out checks, or null: it ranks
 * injections against the agent's real calls worse (ROC-AUC), or blocks more of the real calls.
 */
export function worseThanBase(base: OperatingPoint, adapted: OperatingPoint): string | null {
  if ((adapted.rocAuc ?? 0) < (base.rocAuc ?? 0)) {
    return `the adapted model ranks held-out injections against the traffic's real calls worse than the base (ROC-AUC ${fmt(adapted.rocAuc)} against ${fmt(base.rocAuc)})`;
  }
  if (adapted.realFpr > base.realFpr) return `the adapted model blocks more of the held-out real calls than the base (${pct(adapted.realFpr)} against ${pct(base.realFpr)})`;
  return null;
}
