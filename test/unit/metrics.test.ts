import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  averagePrecision,
  confusion,
  confusionByGroup,
  prCurve,
  quantile,
  rocAuc,
  rocCurve,
  summarizeConfusion,
  tprAtFpr,
  type ScoredLabel,
} from '../../src/core/metrics.js';

interface GoldenCase {
  labels: number[];
  scores: Array<number | null>;
  roc_auc: number;
  average_precision: number;
  'tpr_at_fpr_0': { tpr: number; fpr: number };
  'tpr_at_fpr_0.2': { tpr: number; fpr: number };
  'tpr_at_fpr_0.5': { tpr: number; fpr: number };
}

const GOLDEN = JSON.parse(readFileSync(join(import.meta.dirname, '../golden/metrics-golden.json'), 'utf8')) as Record<string, GoldenCase>;

function items(c: Pick<GoldenCase, 'labels' | 'scores'>): ScoredLabel[] {
  return c.labels.map((l, i) => ({ positive: l === 1, score: c.scores[i]! }));
}

describe('metrics against the golden values of metrics_golden.py', () => {
  for (const [name, c] of Object.entries(GOLDEN)) {
    it(`matches ROC-AUC, AP and TPR at FPR on "${name}"`, () => {
      expect(rocAuc(items(c))).toBeCloseTo(c.roc_auc, 12);
      expect(averagePrecision(items(c))).toBeCloseTo(c.average_precision, 12);
      for (const bound of ['0', '0.2', '0.5'] as const) {
        const got = tprAtFpr(items(c), Number(bound))!;
        const want = c[`tpr_at_fpr_${bound}`];
        expect(got.tpr).toBeCloseTo(want.tpr, 12);
        expect(got.fpr).toBeCloseTo(want.fpr, 12);
      }
    });
  }

  it('gives the hand-computed values on tied scores (AUC 10/16, AP 0.125 + 0.3 + 1/7)', () => {
    const c = GOLDEN['ties']!;
    expect(rocAuc(items(c))).toBeCloseTo(10 / 16, 12);
    expect(averagePrecision(items(c))).toBeCloseTo(0.125 + 0.3 + 1 / 7, 12);
  });
});

describe('metrics', () => {
  it('counts a confusion table and its rates, with null rates for empty denominators', () => {
    const c = confusion([
      { positive: true, predicted: true },
      { positive: true, predicted: false },
      { positive: false, predicted: true },
      { positive: false, predicted: false },
      { positive: false, predicted: false },
    ]);
    expect(c).toEqual({ tp: 1, fn: 1, fp: 1, tn: 2 });
    expect(summarizeConfusion(c)).toMatchObject({ n: 5, tpr: 0.5, fpr: 1 / 3, precision: 0.5 });
    expect(summarizeConfusion(confusion([{ positive: false, predicted: false }]))).toMatchObject({ tpr: null, fpr: 0, precision: null });
  });

  it('returns null AUC and AP and empty curves when a class is missing', () => {
    const onlyNeg = [{ positive: false, score: 1 }, { positive: false, score: 2 }];
    expect(rocAuc(onlyNeg)).toBeNull();
    expect(averagePrecision(onlyNeg)).toBeNull();
    expect(rocCurve(onlyNeg)).toEqual([]);
    expect(prCurve(onlyNeg)).toEqual([]);
    expect(tprAtFpr(onlyNeg, 0.05)).toBeNull();
  });

  it('builds a ROC curve from (0,0) to (1,1) with one point per distinct score and tied scores flagged together', () => {
    const curve = rocCurve(items(GOLDEN['ties']!));
    expect(curve[0]).toEqual({ fpr: 0, tpr: 0, threshold: Infinity });
    expect(curve.map((p) => p.threshold)).toEqual([Infinity, 0.9, 0.5, 0.1, -0.2]);
    expect(curve[1]).toMatchObject({ fpr: 0.25, tpr: 0.25 });
    expect(curve.at(-1)).toMatchObject({ fpr: 1, tpr: 1 });
  });

  it('builds PR points in order of increasing recall', () => {
    const pr = prCurve(items(GOLDEN['ties']!));
    expect(pr.map((p) => p.recall)).toEqual([0.25, 0.75, 1, 1]);
    expect(pr[1]!.precision).toBeCloseTo(0.6, 12);
  });

  it('ranks missing scores below every real score and ties them with each other', () => {
    expect(rocAuc([{ positive: true, score: -1e9 }, { positive: false, score: null }])).toBe(1);
    expect(rocAuc([{ positive: true, score: null }, { positive: false, score: null }])).toBe(0.5);
  });

  it('reports the threshold that reaches the TPR, chosen among the scores', () => {
    const got = tprAtFpr(items(GOLDEN['separable']!), 0.01)!;
    expect(got).toEqual({ tpr: 1, fpr: 0, threshold: 2 });
  });

  it('interpolates quantiles like numpy', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([10, 0, 5], 0.95)).toBeCloseTo(9.5, 12);
    expect(quantile([], 0.5)).toBeNull();
  });

  it('groups confusion tables by key, keys sorted', () => {
    const rows = [
      { s: 'b', positive: true, predicted: true },
      { s: 'a', positive: false, predicted: true },
      { s: 'b', positive: false, predicted: false },
    ];
    const t = confusionByGroup(rows, (r) => r.s, (r) => r);
    expect(Object.keys(t)).toEqual(['a', 'b']);
    expect(t['a']).toMatchObject({ fp: 1, fpr: 1, tpr: null });
    expect(t['b']).toMatchObject({ tp: 1, tn: 1, tpr: 1, fpr: 0 });
  });
});
