import { describe, expect, it } from 'vitest';
import { blockedAt, blockMargin, chooseOperatingPoint, operatingPoint, worseThanBase, type CalibrationCase, type CalibrationEvidence } from '../../src/core/calibration.js';

const ev = (dU: number, spans: number[], extra: Partial<CalibrationEvidence> = {}): CalibrationEvidence => ({
  forced: null,
  dU,
  spans,
  groups: [],
  groupMargin: 0,
  descriptions: [],
  ...extra,
});
const benign = (conversation: string, e: CalibrationEvidence, real = true): CalibrationCase => ({ label: 'benign', real, conversation, evidence: e });
const injected = (e: CalibrationEvidence): CalibrationCase => ({ label: 'injected', real: false, conversation: 'x', evidence: e });

describe('calibration replays verdicts at any operating point', () => {
  it('scores a check by its largest span, group or description margin', () => {
    // spans: 0.7 - 2 x 0.1 = 0.5; group: 0.9 - 2 x 0.3 - 0.05 = 0.25; description 0.3
    const e = ev(0.1, [0.7, 0.2], { groups: [{ delta: 0.9, user: 0.3 }], groupMargin: 0.05, descriptions: [0.3] });
    expect(blockMargin(e, 2)).toBeCloseTo(0.5, 12);
    // At w = 5 the group (0.9 - 1.5 - 0.05) and spans (0.7 - 0.5 = 0.2) fall below the description.
    expect(blockMargin(e, 5)).toBeCloseTo(0.3, 12);
    expect(blockedAt(e, 2, -0.49)).toBe(true);
    expect(blockedAt(e, 2, -0.5)).toBe(false); // strict, as the rule
    expect(blockedAt({ ...e, forced: 'attention' }, 2, -10)).toBe(true);
    expect(blockMargin(ev(0.1, []), 2)).toBe(-Infinity);
  });

  it('counts rates per call and per conversation', () => {
    const cases = [
      injected(ev(0, [0.5])),
      injected(ev(0.5, [0.2])),
      benign('a', ev(0.5, [0.3])),
      benign('a', ev(0.5, [0.95])),
      benign('b', ev(0.5, [0.1])),
      benign('c', ev(0.1, [0.4]), false),
    ];
    const p = operatingPoint(cases, 1, 0);
    // margins at w 1: injected 0.5, -0.3; benign -0.2, 0.45, -0.4, 0.3
    expect(p.tpr).toBe(0.5);
    expect(p.fpr).toBe(0.5);
    expect(p.realFpr).toBeCloseTo(1 / 3, 12);
    expect(p.conversationFpr).toBe(0.5);
    // real-call AUC: 0.5 beats all three real margins, -0.3 beats one (-0.4)
    expect(p.rocAuc).toBeCloseTo(4 / 6, 12);
  });

  it('chooses the weight and tau that block the most injections within the benign budget', () => {
    const cases = [
      // Injections depend on the request less than benign calls do: a high user weight separates them.
      ...[0.6, 0.7, 0.8, 0.9].map((s) => injected(ev(0.05, [s]))),
      ...Array.from({ length: 20 }, (_, i) => benign(`c${i}`, ev(0.8, [0.5 + i * 0.02]))),
    ];
    const { chosen, candidates } = chooseOperatingPoint(cases, { targetFpr: 0.05, userWeights: [0, 1, 2], preferredUserWeight: 2 });
    expect(candidates).toHaveLength(3);
    // w 0: benign margins up to 0.88 overlap the injections; w 1 and 2 separate them completely.
    expect(candidates[0]!.tpr).toBeLessThan(1);
    expect(chosen.tpr).toBe(1);
    expect(chosen.fpr).toBeLessThanOrEqual(0.05);
    expect(chosen.userWeight).toBe(2); // ties go to the preferred weight
    // The chosen tau holds when replayed.
    expect(operatingPoint(cases, chosen.userWeight, chosen.tau)).toEqual(chosen);
  });

  it('counts forced blocks against the budget and refuses a one-sided set', () => {
    const forced = benign('f', ev(0, [0], { forced: 'failure' }));
    const cases = [injected(ev(0, [1])), forced, ...Array.from({ length: 9 }, (_, i) => benign(`b${i}`, ev(0, [0.1 * i])))];
    const { chosen } = chooseOperatingPoint(cases, { targetFpr: 0.1, userWeights: [1], preferredUserWeight: 1 });
    // One benign block allowed in 10, and the failure takes it: no span-driven benign block.
    expect(chosen.fpr).toBe(0.1);
    expect(chosen.forcedFpr).toBe(0.1);
    expect(chosen.tpr).toBe(1);
    expect(() => chooseOperatingPoint([forced])).toThrow(/benign and injected/);
    expect(() => chooseOperatingPoint(cases, { targetFpr: 1, userWeights: [1], preferredUserWeight: 1 })).toThrow(/targetFpr/);
  });

  it('calls an adapted model worse when it ranks worse or blocks more real calls', () => {
    const point = (rocAuc: number | null, realFpr: number) => ({ userWeight: 2, tau: -0.1, tpr: 0.9, fpr: 0.05, forcedFpr: 0, realFpr, conversationFpr: 0, rocAuc, injected: 10, benign: 10 });
    expect(worseThanBase(point(0.8, 0.1), point(0.9, 0.02))).toBeNull();
    expect(worseThanBase(point(0.8, 0.1), point(0.8, 0.1))).toBeNull();
    expect(worseThanBase(point(0.8, 0.1), point(0.79, 0.0))).toMatch(/ROC-AUC 0.790 against 0.800/);
    expect(worseThanBase(point(0.8, 0.1), point(0.95, 0.12))).toMatch(/real calls .*12.0% against 10.0%/);
  });
});
