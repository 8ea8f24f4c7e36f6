/**
 * The operating point (userWeight, tau, the description margins, MindGuard's AIR thresholds, the unlikely-tool threshold) chosen on
 * labelled checks, from the evidence their verdicts already carry: a verdict's deltas, description scores
 * and AIR say how it would have gone at any other threshold, so one scoring pass calibrates every point.
 * `edgearmor adapt` and `edgearmor calibrate` use it on traffic with planted injections; it is pure, so the
 * same numbers come out wherever it runs.
 */
import { InvalidOptionsError } from './errors.js';
import type { CalibrationCase, CalibrationEvidence } from './calibration-evidence.js';
import { rocAuc } from './metrics.js';
import type { ModelOptions } from './model-options.js';
import { resolveOptions, type ResolvedGuardOptions } from './options.js';

export { evidenceOf, type CalibrationCase, type CalibrationEvidence } from './calibration-evidence.js';

/** The thresholds of an operating point: the options calibration sets. */
export interface OperatingThresholds {
  /** `userWeight`. */
  userWeight: number;
  /** `tau`. */
  tau: number;
  /** `toolPoisoning.leaveOneOutMargin`. */
  descriptionMargin: number;
  /** `toolPoisoning.beforeToolResults.leaveOneOutMargin`. */
  firstCallDescriptionMargin: number;
  /** `toolPoisoning.mindguard.airThreshold`. */
  airThreshold: number;
  /** `toolPoisoning.beforeToolResults.airThreshold`. */
  firstCallAirThreshold: number;
  /** `unlikelyToolThreshold` (null: the rule is off). */
  unlikelyToolThreshold: number | null;
}

/** The thresholds the guard uses with these options. */
export function thresholdsOf(options: Pick<ResolvedGuardOptions, 'userWeight' | 'tau' | 'toolPoisoning' | 'unlikelyToolThreshold'>): OperatingThresholds {
  const tp = options.toolPoisoning;
  return {
    userWeight: options.userWeight,
    tau: options.tau,
    descriptionMargin: tp.leaveOneOutMargin,
    firstCallDescriptionMargin: tp.beforeToolResults.leaveOneOutMargin,
    airThreshold: tp.mindguard.airThreshold,
    firstCallAirThreshold: tp.beforeToolResults.airThreshold,
    unlikelyToolThreshold: options.unlikelyToolThreshold,
  };
}

/** The largest span or group score of a check at weight w (a span's dS - w dU, a group's less its margin); -Infinity when none was scored. */
export function blockMargin(e: CalibrationEvidence, userWeight: number): number {
  let m = -Infinity;
  for (const s of e.spans) m = Math.max(m, s.delta - userWeight * s.user);
  for (const g of e.groups) m = Math.max(m, g.delta - userWeight * g.user - e.groupMargin);
  return m;
}

/**
 * How far the check is above the nearest of its thresholds at the point (> 0: blocked; -Infinity: nothing
 * scored): the span rule's margin plus tau, each description's score less (margin - tau), the AIR less its
 * threshold, the unlikely-tool threshold less the tool name's log-probability. A forced block is +Infinity.
 */
export function blockExcess(e: CalibrationEvidence, t: OperatingThresholds): number {
  if (e.forced !== null) return Infinity;
  let m = blockMargin(e, t.userWeight) + t.tau;
  for (const d of e.descriptions) m = Math.max(m, d - t.descriptionMargin + t.tau);
  for (const d of e.firstCallDescriptions) m = Math.max(m, d - t.firstCallDescriptionMargin + t.tau);
  if (e.air !== null) m = Math.max(m, e.air - (e.firstCall ? t.firstCallAirThreshold : t.airThreshold));
  if (t.unlikelyToolThreshold !== null && e.toolLogProb !== null) m = Math.max(m, t.unlikelyToolThreshold - e.toolLogProb);
  return m;
}

/** Whether the check is blocked at the point: flagged iff a score is above its threshold (strict, as the rules). */
export function blockedAt(e: CalibrationEvidence, t: OperatingThresholds): boolean {
  return blockExcess(e, t) > 0;
}

/** Rates of one operating point over labelled checks. */
export interface OperatingPoint extends OperatingThresholds {
  /** Injected calls blocked. */
  tpr: number;
  /** Benign checks blocked (the agent's real calls and planted ignored injections). */
  fpr: number;
  /** Benign checks blocked at any point (the failure policy, the value rule): what recalibration cannot lower. */
  forcedFpr: number;
  /** The agent's real calls blocked. */
  realFpr: number;
  /** Conversations with at least one real call blocked, of those with real calls. */
  conversationFpr: number;
  /** ROC-AUC of injected checks against the real calls, scoring each by its excess over the point's thresholds ({@link blockExcess}). */
  rocAuc: number | null;
  injected: number;
  benign: number;
}

const rate = (n: number, d: number): number => (d === 0 ? 0 : n / d);

/** The rates of the point over the cases. */
export function operatingPoint(cases: readonly CalibrationCase[], t: OperatingThresholds): OperatingPoint {
  const injected = cases.filter((c) => c.label === 'injected');
  const benign = cases.filter((c) => c.label === 'benign');
  const real = benign.filter((c) => c.real);
  const blocked = (c: CalibrationCase): boolean => blockedAt(c.evidence, t);
  const conversations = new Map<string, boolean>();
  for (const c of real) conversations.set(c.conversation, (conversations.get(c.conversation) ?? false) || blocked(c));
  const score = (c: CalibrationCase): number => Math.min(Number.MAX_VALUE, Math.max(-1e6, blockExcess(c.evidence, t)));
  return {
    ...t,
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
  /** The thresholds kept for a signal no benign check carries (nothing to place them on). @defaultValue the guard's defaults */
  current?: OperatingThresholds;
}

export const DEFAULT_CALIBRATION_SEARCH: Readonly<CalibrationSearch> = Object.freeze({
  targetFpr: 0.03,
  userWeights: Object.freeze([0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3]),
  preferredUserWeight: 2,
});

/** The signals whose thresholds are chosen, each by a cut on one value per check (flagged iff the value > the cut). */
export const CALIBRATED_SIGNALS = Object.freeze(['spans', 'descriptions', 'firstCallDescriptions', 'air', 'firstCallAir', 'unlikelyTool'] as const);

/** One of {@link CALIBRATED_SIGNALS}. */
export type CalibratedSignal = (typeof CALIBRATED_SIGNALS)[number];

/** How many benign and injected checks carried each signal: a signal no benign check carries keeps its current threshold. */
export type SignalCounts = Record<CalibratedSignal, { benign: number; injected: number }>;

/**
 * A check's value for one signal at weight w (flagged iff above the signal's cut), or -Infinity where it
 * has none: spans and groups by the span rule's margin, descriptions by their largest score, MindGuard by its AIR,
 * the unlikely-tool rule by the tool name's negated log-probability per token.
 */
function signalValue(e: CalibrationEvidence, signal: CalibratedSignal, w: number): number {
  switch (signal) {
    case 'spans':
      return blockMargin(e, w);
    case 'descriptions':
      return e.descriptions.length > 0 ? Math.max(...e.descriptions) : -Infinity;
    case 'firstCallDescriptions':
      return e.firstCallDescriptions.length > 0 ? Math.max(...e.firstCallDescriptions) : -Infinity;
    case 'air':
    case 'firstCallAir':
      return e.firstCall === (signal === 'firstCallAir') && e.air !== null ? e.air : -Infinity;
    case 'unlikelyTool':
      return e.toolLogProb !== null ? -e.toolLogProb : -Infinity;
  }
}

/**
 * A cut moved to the next 1e-3 strictly above it. A cut is a benign check's own value, which must stay
 * unblocked; the guard compares in another order of floating-point operations (dS > w dU - tau, not
 * dS - w dU > -tau), so a threshold equal to the value could block it.
 */
const above = (x: number): number => Math.ceil(x * 1000 + 1e-3) / 1000;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * The point's thresholds from the cuts: tau = -(span cut), a description margin = its cut + tau, an AIR threshold = its
 * cut (at least 0), the unlikely-tool threshold = -(its cut).
 */
function thresholdsFromCuts(w: number, cut: Readonly<Record<CalibratedSignal, number>>, current: OperatingThresholds): OperatingThresholds {
  // A signal with no benign value keeps its current threshold as it is (its cut is that threshold).
  const tau = cut.spans === -current.tau ? current.tau : -above(cut.spans);
  const margin = (c: number, now: number) => (c === now - current.tau ? now : round3(above(c) + tau));
  const air = (c: number, now: number) => (c === now ? now : Math.max(0, above(c)));
  return {
    userWeight: w,
    tau,
    descriptionMargin: margin(cut.descriptions, current.descriptionMargin),
    firstCallDescriptionMargin: margin(cut.firstCallDescriptions, current.firstCallDescriptionMargin),
    airThreshold: air(cut.air, current.airThreshold),
    firstCallAirThreshold: air(cut.firstCallAir, current.firstCallAirThreshold),
    unlikelyToolThreshold: cut.unlikelyTool === cutsOf(current).unlikelyTool ? current.unlikelyToolThreshold : -above(cut.unlikelyTool),
  };
}

/** The cuts of the current thresholds at weight w (the inverse of thresholdsFromCuts). */
function cutsOf(t: OperatingThresholds): Record<CalibratedSignal, number> {
  return {
    spans: -t.tau,
    descriptions: t.descriptionMargin - t.tau,
    firstCallDescriptions: t.firstCallDescriptionMargin - t.tau,
    air: t.airThreshold,
    firstCallAir: t.firstCallAirThreshold,
    // Off: no call is below it.
    unlikelyTool: t.unlikelyToolThreshold === null ? Infinity : -t.unlikelyToolThreshold,
  };
}

/** Lowering a cut by up to this many benign values at a time lets the search cross a plateau of benign values with no injection between them. */
const LOOKAHEAD = 8;

/**
 * The cuts at weight w: every signal starts where it blocks no benign check, then, one move at a time, the
 * signal whose next cut blocks the most more injected checks per benign check it adds to the blocked set
 * (the union over signals; forced blocks count against the budget) is lowered, while the benign blocks stay
 * within floor(targetFpr x benign). A signal no benign check carries keeps its current cut.
 */
function cutsAt(cases: readonly CalibrationCase[], w: number, targetFpr: number, current: OperatingThresholds): Record<CalibratedSignal, number> {
  const values = CALIBRATED_SIGNALS.map((s) => cases.map((c) => signalValue(c.evidence, s, w)));
  const isBenign = cases.map((c) => c.label === 'benign');
  const forced = cases.map((c) => c.evidence.forced !== null);
  // Each signal's candidate cuts: its benign values, largest first, then just below the least.
  const ladders = values.map((v) => {
    const b = [...new Set(v.filter((x, i) => isBenign[i] && Number.isFinite(x)))].sort((x, y) => y - x);
    // The last rung blocks every benign value of the signal, with room for the cut's move above it.
    return b.length === 0 ? [] : [...b, b[b.length - 1]! - 0.002];
  });
  const keep = cutsOf(current);
  const step = ladders.map(() => 0);
  const cutOf = (k: number, at: number): number => (ladders[k]!.length === 0 ? keep[CALIBRATED_SIGNALS[k]!] : ladders[k]![at]!);
  const count = (cuts: readonly number[]): { benign: number; injected: number } => {
    let benign = 0;
    let injected = 0;
    for (let i = 0; i < cases.length; i++) {
      const blocked = forced[i] || values.some((v, k) => v[i]! > cuts[k]!);
      if (blocked) {
        if (isBenign[i]) benign++;
        else injected++;
      }
    }
    return { benign, injected };
  };
  const budget = Math.floor(targetFpr * isBenign.filter(Boolean).length + 1e-9);
  let now = count(step.map((s, k) => cutOf(k, s)));
  for (;;) {
    let best: { k: number; at: number; gain: number; cost: number; counts: { benign: number; injected: number } } | null = null;
    for (let k = 0; k < ladders.length; k++) {
      for (let j = 1; j <= LOOKAHEAD && step[k]! + j < ladders[k]!.length; j++) {
        const at = step[k]! + j;
        const counts = count(step.map((s, m) => cutOf(m, m === k ? at : s)));
        if (counts.benign > budget) break;
        const gain = counts.injected - now.injected;
        const cost = counts.benign - now.benign;
        if (gain <= 0) continue;
        // Most injected checks per added benign block; a move that adds none is taken first.
        const better = best === null || gain * Math.max(best.cost, 1e-9) > best.gain * Math.max(cost, 1e-9) || (gain * best.cost === best.gain * cost && cost < best.cost);
        if (better) best = { k, at, gain, cost, counts };
      }
    }
    if (best === null) break;
    step[best.k] = best.at;
    now = best.counts;
  }
  const cuts = step.map((s, k) => cutOf(k, s));
  // A rule that is off (the unlikely-tool rule by default) stays off unless it blocks an injected check no other rule blocks.
  for (let k = 0; k < cuts.length; k++) {
    if (keep[CALIBRATED_SIGNALS[k]!] !== Infinity || cuts[k] === Infinity) continue;
    const without = cuts.map((c, m) => (m === k ? Infinity : c));
    if (count(without).injected === now.injected) cuts[k] = Infinity;
  }
  return Object.fromEntries(CALIBRATED_SIGNALS.map((s, k) => [s, cuts[k]!])) as Record<CalibratedSignal, number>;
}

/**
 * The operating point within the benign budget: for each weight, the cuts of every signal (spans and groups
 * by tau, the description margins before and after tool results, MindGuard's two AIR thresholds) chosen
 * together ({@link cutsAt}), then the weight whose point blocks the most injected calls (ties: fewer benign
 * blocks, then the preferred weight). Returns the chosen point, every weight's best and each signal's counts.
 */
export function chooseOperatingPoint(
  cases: readonly CalibrationCase[],
  search: CalibrationSearch = DEFAULT_CALIBRATION_SEARCH,
): { chosen: OperatingPoint; candidates: OperatingPoint[]; signals: SignalCounts } {
  if (!(search.targetFpr >= 0 && search.targetFpr < 1)) {
    throw new InvalidOptionsError(`targetFpr: received ${search.targetFpr}; allowed: a fraction from 0 up to (not including) 1.`, { option: 'targetFpr' });
  }
  const benign = cases.filter((c) => c.label === 'benign');
  if (benign.length === 0 || !cases.some((c) => c.label === 'injected')) {
    throw new InvalidOptionsError('calibration needs benign and injected checks; received only one kind.', { option: 'cases' });
  }
  const current = search.current ?? thresholdsOf(resolveOptions({}));
  const candidates = search.userWeights.map((w) => operatingPoint(cases, thresholdsFromCuts(w, cutsAt(cases, w, search.targetFpr, current), current)));
  const better = (a: OperatingPoint, b: OperatingPoint): boolean =>
    a.tpr !== b.tpr ? a.tpr > b.tpr : a.fpr !== b.fpr ? a.fpr < b.fpr : Math.abs(a.userWeight - search.preferredUserWeight) < Math.abs(b.userWeight - search.preferredUserWeight);
  const chosen = candidates.reduce((best, p) => (better(p, best) ? p : best));
  const signals = Object.fromEntries(
    CALIBRATED_SIGNALS.map((s) => {
      const carried = cases.filter((c) => Number.isFinite(signalValue(c.evidence, s, chosen.userWeight)));
      return [s, { benign: carried.filter((c) => c.label === 'benign').length, injected: carried.filter((c) => c.label === 'injected').length }];
    }),
  ) as SignalCounts;
  return { chosen, candidates, signals };
}

/**
 * The guard options of a chosen point, as a model directory's guard-options.json carries them: the weight
 * and tau always, a signal's threshold only where benign checks carried that signal (the others stay the
 * caller's or the defaults: nothing placed them), the unlikely-tool threshold only where the point turned the rule on.
 */
export function pointOptions(point: OperatingThresholds, signals: SignalCounts): ModelOptions {
  const has = (s: CalibratedSignal): boolean => signals[s].benign > 0;
  const mindguard = has('air') ? { mindguard: { airThreshold: point.airThreshold } } : {};
  const unlikely = has('unlikelyTool') && point.unlikelyToolThreshold !== null ? { unlikelyToolThreshold: point.unlikelyToolThreshold } : {};
  const first = {
    ...(has('firstCallAir') ? { airThreshold: point.firstCallAirThreshold } : {}),
    ...(has('firstCallDescriptions') ? { leaveOneOutMargin: point.firstCallDescriptionMargin } : {}),
  };
  const toolPoisoning = {
    ...(has('descriptions') ? { leaveOneOutMargin: point.descriptionMargin } : {}),
    ...mindguard,
    ...(Object.keys(first).length > 0 ? { beforeToolResults: first } : {}),
  };
  return { userWeight: point.userWeight, tau: point.tau, ...(Object.keys(toolPoisoning).length > 0 ? { toolPoisoning } : {}), ...unlikely };
}
