/**
 * Detection metrics for the evaluation: confusion counts, rates, ROC-AUC, average precision,
 * curve points and TPR at a bounded FPR. Pure functions over plain arrays; a score of null means
 * "no score" and ranks below every real score (as -Infinity).
 */

/** One scored example: whether it is a positive (injected) and its continuous score. */
export interface ScoredLabel {
  positive: boolean;
  /** Higher = more likely injected; null (no untrusted span, no attribution) ranks lowest. */
  score: number | null;
}

/** Counts of a binary decision against the labels. */
export interface Confusion {
  tp: number;
  fp: number;
  tn: number;
  fn: number;
}

/** A confusion table with its rates; a rate is null when its denominator is zero. */
export interface ConfusionSummary extends Confusion {
  n: number;
  tpr: number | null;
  fpr: number | null;
  precision: number | null;
}

/** One ROC point: flag iff score >= threshold. */
export interface RocPoint {
  fpr: number;
  tpr: number;
  threshold: number;
}

/** One precision-recall point: flag iff score >= threshold. */
export interface PrPoint {
  recall: number;
  precision: number;
  threshold: number;
}

/** The best TPR reachable with FPR at most the bound, and the threshold on the scores that gives it. */
export interface TprAtFpr {
  tpr: number;
  fpr: number;
  /** Flag iff score >= threshold; +Infinity flags nothing. */
  threshold: number;
}

function value(score: number | null): number {
  return score === null || Number.isNaN(score) ? -Infinity : score;
}

/** Orders numbers including infinities (a - b is NaN for two equal infinities). */
function compare(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function ratio(num: number, den: number): number | null {
  return den === 0 ? null : num / den;
}

/** Counts tp/fp/tn/fn of binary decisions against labels. */
export function confusion(items: ReadonlyArray<{ positive: boolean; predicted: boolean }>): Confusion {
  const c: Confusion = { tp: 0, fp: 0, tn: 0, fn: 0 };
  for (const { positive, predicted } of items) {
    if (positive && predicted) c.tp++;
    else if (positive) c.fn++;
    else if (predicted) c.fp++;
    else c.tn++;
  }
  return c;
}

/** Adds n and the rates (TPR = tp/(tp+fn), FPR = fp/(fp+tn), precision = tp/(tp+fp)) to counts. */
export function summarizeConfusion(c: Confusion): ConfusionSummary {
  return { ...c, n: c.tp + c.fp + c.tn + c.fn, tpr: ratio(c.tp, c.tp + c.fn), fpr: ratio(c.fp, c.fp + c.tn), precision: ratio(c.tp, c.tp + c.fp) };
}

/** Distinct thresholds in descending order with the cumulative tp/fp counts at each (flag iff score >= threshold). */
function cumulative(items: readonly ScoredLabel[]): { thresholds: number[]; tps: number[]; fps: number[]; pos: number; neg: number } {
  const sorted = items.map((x) => ({ s: value(x.score), p: x.positive })).sort((a, b) => compare(b.s, a.s));
  const thresholds: number[] = [];
  const tps: number[] = [];
  const fps: number[] = [];
  let tp = 0;
  let fp = 0;
  sorted.forEach((x, i) => {
    if (x.p) tp++;
    else fp++;
    // Emit a point only after the last item of a run of tied scores: tied items are flagged together.
    const next = sorted[i + 1];
    if (next === undefined || next.s !== x.s) {
      thresholds.push(x.s);
      tps.push(tp);
      fps.push(fp);
    }
  });
  return { thresholds, tps, fps, pos: tp, neg: fp };
}

/** ROC-AUC as the Mann-Whitney U statistic with average ranks for ties (ties count one half); null without both classes. */
export function rocAuc(items: readonly ScoredLabel[]): number | null {
  const sorted = items.map((x) => ({ s: value(x.score), p: x.positive })).sort((a, b) => compare(a.s, b.s));
  let pos = 0;
  let rankSumPos = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1]!.s === sorted[i]!.s) j++;
    const avgRank = (i + 1 + (j + 1)) / 2;
    for (let k = i; k <= j; k++) {
      if (sorted[k]!.p) {
        pos++;
        rankSumPos += avgRank;
      }
    }
    i = j + 1;
  }
  const neg = sorted.length - pos;
  if (pos === 0 || neg === 0) return null;
  return (rankSumPos - (pos * (pos + 1)) / 2) / (pos * neg);
}

/** Average precision with scikit-learn's step definition: sum over thresholds of (R_k - R_{k-1}) * P_k; null without positives. */
export function averagePrecision(items: readonly ScoredLabel[]): number | null {
  const { tps, fps, pos } = cumulative(items);
  if (pos === 0) return null;
  let ap = 0;
  let prevRecall = 0;
  tps.forEach((tp, k) => {
    const recall = tp / pos;
    const precision = tp / (tp + fps[k]!);
    ap += (recall - prevRecall) * precision;
    prevRecall = recall;
  });
  return ap;
}

/** ROC curve points from (0, 0) at threshold +Infinity to (1, 1), one per distinct score; empty without both classes. */
export function rocCurve(items: readonly ScoredLabel[]): RocPoint[] {
  const { thresholds, tps, fps, pos, neg } = cumulative(items);
  if (pos === 0 || neg === 0) return [];
  return [{ fpr: 0, tpr: 0, threshold: Infinity }, ...thresholds.map((t, k) => ({ fpr: fps[k]! / neg, tpr: tps[k]! / pos, threshold: t }))];
}

/** Precision-recall points, one per distinct score, in order of increasing recall; empty without positives. */
export function prCurve(items: readonly ScoredLabel[]): PrPoint[] {
  const { thresholds, tps, fps, pos } = cumulative(items);
  if (pos === 0) return [];
  return thresholds.map((t, k) => ({ recall: tps[k]! / pos, precision: tps[k]! / (tps[k]! + fps[k]!), threshold: t }));
}

/** The highest TPR whose FPR is at most maxFpr, over thresholds taken from the scores themselves; null without both classes. */
export function tprAtFpr(items: readonly ScoredLabel[], maxFpr: number): TprAtFpr | null {
  const curve = rocCurve(items);
  if (curve.length === 0) return null;
  let best: TprAtFpr = { tpr: 0, fpr: 0, threshold: Infinity };
  for (const p of curve) {
    if (p.fpr <= maxFpr && p.tpr > best.tpr) best = { tpr: p.tpr, fpr: p.fpr, threshold: p.threshold };
  }
  return best;
}

/** The q-quantile (0..1) with linear interpolation between order statistics (numpy's default); null for no values. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

/** Groups items by a key, keeping first-seen key order. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const g = groups.get(k);
    if (g) g.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** A confusion summary per group, keys sorted. */
export function confusionByGroup<T>(
  items: readonly T[],
  key: (item: T) => string,
  decision: (item: T) => { positive: boolean; predicted: boolean },
): Record<string, ConfusionSummary> {
  const out: Record<string, ConfusionSummary> = {};
  const groups = groupBy(items, key);
  for (const k of [...groups.keys()].sort()) out[k] = summarizeConfusion(confusion(groups.get(k)!.map(decision)));
  return out;
}
