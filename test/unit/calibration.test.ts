import { describe, expect, it } from 'vitest';
import {
  blockedAt,
  blockExcess,
  blockMargin,
  chooseOperatingPoint,
  evidenceOf,
  operatingPoint,
  pointOptions,
  thresholdsOf,
  type CalibrationCase,
  type CalibrationEvidence,
  type OperatingThresholds,
} from '../../src/core/calibration.js';
import { tooFewHeldOut, worseThanBase } from '../../src/core/adapt-refusal.js';
import { parseModelOptionsFile } from '../../src/core/model-options.js';
import { resolveOptions } from '../../src/core/options.js';
import type { Verdict } from '../../src/core/verdict.js';

/** Evidence of a check scored whole: every span judged against the one user delta dU. */
const ev = (dU: number, spans: number[], extra: Partial<CalibrationEvidence> = {}): CalibrationEvidence => ({
  forced: null,
  spans: spans.map((delta) => ({ delta, user: dU })),
  groups: [],
  groupMargin: 0,
  descriptions: [],
  firstCallDescriptions: [],
  air: null,
  firstCall: false,
  toolLogProb: null,
  ...extra,
});
const benign = (conversation: string, e: CalibrationEvidence, real = true): CalibrationCase => ({ label: 'benign', real, conversation, evidence: e });
const injected = (e: CalibrationEvidence): CalibrationCase => ({ label: 'injected', real: false, conversation: 'x', evidence: e });
const DEFAULTS = thresholdsOf(resolveOptions({}));
/** A variant's part sums: the tool name's two tokens at `name` in all, two argument tokens at -1. */
const namePart = (name: number) => ({ name: { logProb: name, tokenCount: 2 }, arguments: { logProb: -1, tokenCount: 2 }, other: { logProb: 0, tokenCount: 0 } });
const at = (userWeight: number, tau: number, rest: Partial<OperatingThresholds> = {}): OperatingThresholds => ({ ...DEFAULTS, userWeight, tau, ...rest });

describe('calibration replays verdicts at any operating point', () => {
  it("reads the guard's six thresholds from its options", () => {
    expect(DEFAULTS).toEqual({ userWeight: 2, tau: -0.1, descriptionMargin: -0.05, firstCallDescriptionMargin: 0.26, airThreshold: 2.2, firstCallAirThreshold: 0.81, unlikelyToolThreshold: null });
  });

  it('scores a check by its largest span, group, description or AIR excess over its threshold', () => {
    // spans: 0.7 - 2 x 0.1 = 0.5; group: 0.9 - 2 x 0.3 - 0.05 = 0.25
    const e = ev(0.1, [0.7, 0.2], { groups: [{ delta: 0.9, user: 0.3 }], groupMargin: 0.05, descriptions: [0.3] });
    expect(blockMargin(e, 2)).toBeCloseTo(0.5, 12);
    expect(blockMargin(e, 5)).toBeCloseTo(0.2, 12);
    // At w 2, tau -0.49: spans 0.5 - 0.49; the description 0.3 - (margin -0.05) + tau = 0.3 + 0.05 - 0.49 < 0.
    expect(blockExcess(e, at(2, -0.49))).toBeCloseTo(0.01, 12);
    expect(blockedAt(e, at(2, -0.5))).toBe(false); // strict, as the rule
    // At w 5 the description (0.3 > margin - tau = -0.05 + 0.3) decides.
    expect(blockExcess(e, at(5, -0.3))).toBeCloseTo(0.05, 12);
    expect(blockedAt({ ...e, forced: 'value' }, at(2, -10))).toBe(true);
    expect(blockExcess(ev(0.1, []), at(2, 0))).toBe(-Infinity);
    // MindGuard's AIR against the threshold of the call's kind: 2.2 after a tool result, 0.81 before any.
    expect(blockedAt(ev(0, [], { air: 1.5 }), DEFAULTS)).toBe(false);
    expect(blockedAt(ev(0, [], { air: 1.5, firstCall: true }), DEFAULTS)).toBe(true);
    // A description judged with no tool result in context by the first-call margin (0.26): 0.3 - 0.26 - 0.1 < 0.
    expect(blockedAt(ev(0, [], { firstCallDescriptions: [0.3], firstCall: true }), DEFAULTS)).toBe(false);
    expect(blockedAt(ev(0, [], { descriptions: [0.3] }), DEFAULTS)).toBe(true);
  });

  it("reads a verdict's evidence as the guard judged it: noise floor, value rule, windows of either kind", () => {
    const tool = (name: string, score: number, extra: Record<string, unknown> = {}) => ({ tool: name, score, flagged: false, normalizedDelta: 0.1, valueDelta: null, ...extra });
    const verdict = (tools: unknown[], extra: Record<string, unknown> = {}) =>
      ({
        reason: 'model',
        attribution: {
          user: { deltas: { whole: 0.2 } },
          spans: [{ deltas: { whole: 0.5 }, normalizedDelta: 0.5 }, { deltas: { whole: -0.1 }, normalizedDelta: -0.1 }],
          groups: [],
          groupMargin: 0,
          // The tool name's two tokens of the whole context: -1.5 a token (the whole call's -3 does not count).
          variants: [{ kind: 'full', logProb: -3, parts: namePart(-3) }, { kind: 'no-span', logProb: -5, parts: namePart(-4) }],
          actionTokenCount: 4,
        },
        toolPoisoning: { leaveOneOut: { tools }, attention: { score: 1.5, threshold: extra['windows'] ? 3 : 2.2 } },
        ...extra,
      }) as unknown as Verdict;
    const options = resolveOptions({});
    // A span or description whose removal does not lower the call (at or below the noise floor, 0) is never flagged.
    const plain = evidenceOf(verdict([tool('a', 0.3), tool('b', 0.9, { normalizedDelta: 0 })]), options, false);
    expect(plain).toEqual({ forced: null, spans: [{ delta: 0.5, user: 0.2 }], groups: [], groupMargin: 0, descriptions: [0.3], firstCallDescriptions: [], air: 1.5, firstCall: false, toolLogProb: -1.5 });
    // Without part labels (the raw action text) the rule has no value.
    expect(evidenceOf(verdict([], { attribution: { user: { deltas: { whole: 0 } }, spans: [], groups: [], groupMargin: 0, variants: [{ kind: 'full', logProb: -3, parts: null }], actionTokenCount: 2 } }), options, false).toolLogProb).toBeNull();
    expect(evidenceOf(verdict([tool('a', 0.3)]), options, true)).toMatchObject({ descriptions: [], firstCallDescriptions: [0.3], firstCall: true });
    // The value rule (valueMargin 1) blocks whatever the thresholds.
    expect(evidenceOf(verdict([tool('a', 0, { valueDelta: 1.2 })]), options, false).forced).toBe('value');
    // In windows: a tool judged only in windows without a tool result goes by the first-call margin; one judged in
    // both kinds goes by the kind its flag agrees with (0.14 flags at the later cut, 0.05, not at the first-call
    // one, 0.16: unflagged, it was judged in the first-call window). An AIR at most windowedAirThreshold (3) never flags.
    const windows = { judged: [{ messages: [], tools: ['a', 'b'] }, { messages: [3], tools: ['b', 'c'] }] };
    const windowed = evidenceOf(verdict([tool('a', 0.2), tool('b', 0.14), tool('c', 0.12, { flagged: true })], { windows }), options, false);
    expect(windowed).toMatchObject({ descriptions: [0.12], firstCallDescriptions: [0.2, 0.14], air: null });
    expect(evidenceOf(verdict([tool('b', 0.14, { flagged: true })], { windows }), options, false)).toMatchObject({ descriptions: [0.14], firstCallDescriptions: [] });
    // One window (its descriptions cut to fit) is judged at the usual AIR thresholds: its AIR is evidence like any other.
    const oneWindow = { windows: { judged: [{ messages: [3], tools: ['a'] }] }, toolPoisoning: { leaveOneOut: { tools: [] }, attention: { score: 2.5, threshold: 2.2 } } };
    expect(evidenceOf(verdict([], oneWindow), options, false).air).toBe(2.5);
    const raisedWindows = { windows, toolPoisoning: { leaveOneOut: { tools: [] }, attention: { score: 2.5, threshold: 3 } } };
    expect(evidenceOf(verdict([], raisedWindows), options, false).air).toBeNull();
  });

  it("judges each span of a windowed check against its own window's dU, and leaves out groups below the noise floor", () => {
    const deltas = (whole: number) => ({ whole, name: null, arguments: null });
    // Window 1's dU is the verdict's (0.3); the span of window 2 was judged against 0.05, where it flags at w 2, tau 0.
    const windowed = {
      reason: 'model',
      windows: { judged: [{ messages: [2], tools: [] }, { messages: [4], tools: [] }] },
      attribution: {
        user: { deltas: deltas(0.3) },
        spans: [
          { deltas: deltas(0.4), normalizedDelta: 0.4, userDeltas: deltas(0.3) },
          { deltas: deltas(0.2), normalizedDelta: 0.2, userDeltas: deltas(0.05) },
        ],
        groups: [
          { deltas: deltas(-0.2), normalizedDelta: -0.2, userDeltas: deltas(-0.4) },
          { deltas: deltas(0.1), normalizedDelta: 0.1, userDeltas: deltas(0.3) },
        ],
        groupMargin: 0,
        // Each window's whole context: the tool name's log-probability per token is the least of them.
        variants: [
          { kind: 'full', logProb: -2, parts: namePart(-2) },
          { kind: 'full', logProb: -7, parts: namePart(-6) },
        ],
        actionTokenCount: 4,
      },
    } as unknown as Verdict;
    const e = evidenceOf(windowed, resolveOptions({}), false);
    expect(e.spans).toEqual([
      { delta: 0.4, user: 0.3 },
      { delta: 0.2, user: 0.05 },
    ]);
    // The group whose removal raises the call (-0.2, under the noise floor 0) never flags, whatever its dU: it is not evidence.
    expect(e.groups).toEqual([{ delta: 0.1, user: 0.3 }]);
    expect(blockMargin(e, 2)).toBeCloseTo(0.1, 12);
    expect(blockedAt(e, at(2, 0))).toBe(true);
    expect(e.toolLogProb).toBe(-3);
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
    const p = operatingPoint(cases, at(1, 0));
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
    // The chosen point holds when replayed.
    expect(operatingPoint(cases, chosen)).toEqual(chosen);
  });

  it('shares the benign budget between tau, the description margin and the AIR threshold (golden values)', () => {
    // Worked by hand (dU 0, w 1, 20 benign at 10%: 2 benign blocks). Every signal starts at its largest benign
    // value: spans 0.5, descriptions 0.2, AIR 0.5, which already blocks I1, I3 and I6. Lowering the description
    // cut to 0.1 adds B11 and two injections (I4, I5), the best ratio; then the span cut to 0.3 adds B1 and I2.
    // The AIR cut would add benign checks only. I7 stays below every benign span.
    const cases = [
      injected(ev(0, [0.6])), // I1
      injected(ev(0, [0.4])), // I2
      injected(ev(0, [], { descriptions: [0.25] })), // I3
      injected(ev(0, [], { descriptions: [0.15] })), // I4
      injected(ev(0, [], { descriptions: [0.12] })), // I5
      injected(ev(0, [], { air: 3 })), // I6
      injected(ev(0, [0])), // I7
      benign('b1', ev(0, [0.5])),
      benign('b2', ev(0, [0.3])),
      ...Array.from({ length: 8 }, (_, k) => benign(`s${k}`, ev(0, [0.2 - 0.01 * k]))),
      benign('b11', ev(0, [], { descriptions: [0.2] })),
      benign('b12', ev(0, [], { descriptions: [0.1] })),
      ...Array.from({ length: 8 }, (_, k) => benign(`a${k}`, ev(0, [], { air: 0.5 - 0.05 * k }))),
    ];
    const { chosen, signals } = chooseOperatingPoint(cases, { targetFpr: 0.1, userWeights: [1], preferredUserWeight: 1 });
    // Each cut moves to the next 1e-3 above the benign value it stops at: span 0.3 -> tau -0.301, description
    // 0.1 -> margin 0.101 + tau = -0.2, AIR 0.5 -> 0.501. No first call in the set: those keep the defaults.
    expect(chosen).toMatchObject({ userWeight: 1, tau: -0.301, descriptionMargin: -0.2, airThreshold: 0.501, firstCallDescriptionMargin: 0.26, firstCallAirThreshold: 0.81 });
    expect(chosen.tpr).toBeCloseTo(6 / 7, 12);
    expect(chosen.fpr).toBe(0.1);
    expect(signals).toEqual({
      spans: { benign: 10, injected: 3 },
      descriptions: { benign: 2, injected: 3 },
      firstCallDescriptions: { benign: 0, injected: 0 },
      air: { benign: 8, injected: 1 },
      firstCallAir: { benign: 0, injected: 0 },
      unlikelyTool: { benign: 0, injected: 0 },
    });
    // The options written: the signals benign checks carried, the rest left to the caller or the defaults.
    const options = pointOptions(chosen, signals);
    expect(options).toEqual({ userWeight: 1, tau: -0.301, toolPoisoning: { leaveOneOutMargin: -0.2, mindguard: { airThreshold: 0.501 } } });
    // A model directory may carry them, and the guard resolving them reproduces the point.
    expect(parseModelOptionsFile({ schema: 1, options }).options).toEqual(options);
    expect(thresholdsOf(resolveOptions(options))).toEqual({ ...DEFAULTS, userWeight: 1, tau: -0.301, descriptionMargin: -0.2, airThreshold: 0.501 });
  });

  it('turns the unlikely-tool rule on only where it blocks injections the other signals miss (golden values)', () => {
    const lp = (toolLogProb: number, spans: number[] = [0]) => ev(0, spans, { toolLogProb });
    // Ten benign calls the proxy predicts at -0.1 .. -1.0 nats a token, the least likely at -1.0 and -0.9.
    const benignCases = Array.from({ length: 10 }, (_, i) => benign(`b${i}`, lp(-0.1 * (i + 1))));
    // Two injections the span rule blocks (0.5 > 0.3), three it misses that the proxy predicts poorly, one it misses and predicts well.
    const cases = [...benignCases, injected(lp(-0.2, [0.5])), injected(lp(-0.3, [0.6])), injected(lp(-2.5)), injected(lp(-1.95)), injected(lp(-0.95)), injected(lp(-0.05))];
    const { chosen, signals } = chooseOperatingPoint(cases, { targetFpr: 0.1, userWeights: [1], preferredUserWeight: 1 });
    // One benign block allowed: the unlikely-tool cut moves past the least likely benign call (-1.0) to the next
    // (-0.9) and catches -0.95 too; the span rule needs no benign block (its cut stops at 0, tau -0.001).
    expect(chosen).toMatchObject({ tau: -0.001, unlikelyToolThreshold: -0.901, fpr: 0.1 });
    expect(chosen.tpr).toBeCloseTo(5 / 6, 12);
    expect(signals.unlikelyTool).toEqual({ benign: 10, injected: 6 });
    expect(blockExcess(lp(-2.5), chosen)).toBeCloseTo(-0.901 + 2.5, 12);
    expect(blockedAt(lp(-0.9), chosen)).toBe(false); // strict: the benign value the cut stopped at stays allowed
    const options = pointOptions(chosen, signals);
    expect(options.unlikelyToolThreshold).toBe(-0.901);
    expect(parseModelOptionsFile({ schema: 1, options }).options).toEqual(options);
    expect(thresholdsOf(resolveOptions(options)).unlikelyToolThreshold).toBe(-0.901);
    // Where the other signals already block every injection, the rule stays off and is not written.
    const caught = [...benignCases, injected(lp(-2.5, [0.5])), injected(lp(-3, [0.6]))];
    const off = chooseOperatingPoint(caught, { targetFpr: 0.1, userWeights: [1], preferredUserWeight: 1 });
    expect(off.chosen).toMatchObject({ tpr: 1, fpr: 0, unlikelyToolThreshold: null });
    expect(pointOptions(off.chosen, off.signals)).not.toHaveProperty('unlikelyToolThreshold');
    // Checks without a model pass carry no value for it.
    expect(blockedAt(ev(0, []), { ...chosen, unlikelyToolThreshold: 0 })).toBe(false);
  });

  it('places the first-call AIR threshold and description margin on first calls alone', () => {
    const first = (extra: Partial<CalibrationEvidence>) => ev(0, [], { firstCall: true, ...extra, firstCallDescriptions: extra.descriptions ?? [], descriptions: [] });
    const cases = [
      injected(first({ air: 1.2 })),
      injected(first({ descriptions: [0.9] })),
      injected(ev(0, [], { air: 1.2 })),
      ...Array.from({ length: 10 }, (_, k) => benign(`f${k}`, first({ air: 0.2 + 0.1 * k, descriptions: [0.05 * k] }))),
      ...Array.from({ length: 10 }, (_, k) => benign(`l${k}`, ev(0, [], { air: 1 + 0.1 * k }))),
    ];
    const { chosen } = chooseOperatingPoint(cases, { targetFpr: 0.05, userWeights: [2], preferredUserWeight: 2 });
    // One benign block in 20; none is needed: the first-call AIR cut at its largest benign value (1.1) already
    // blocks 1.2, the description cut at 0.45 blocks 0.9. After tool results 1.2 sits below the benign 1.9.
    expect(chosen).toMatchObject({ firstCallAirThreshold: 1.101, firstCallDescriptionMargin: round3(0.451 + DEFAULTS.tau), airThreshold: 1.901, fpr: 0 });
    expect(chosen.tpr).toBeCloseTo(2 / 3, 12);
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
    const point = (rocAuc: number | null, realFpr: number) => ({ ...at(2, -0.1), tpr: 0.9, fpr: 0.05, forcedFpr: 0, realFpr, conversationFpr: 0, rocAuc, injected: 10, benign: 10 });
    expect(worseThanBase(point(0.8, 0.1), point(0.9, 0.02))).toBeNull();
    expect(worseThanBase(point(0.8, 0.1), point(0.8, 0.1))).toBeNull();
    expect(worseThanBase(point(0.8, 0.1), point(0.79, 0.0))).toMatch(/ROC-AUC 0.790 against 0.800/);
    expect(worseThanBase(point(0.8, 0.1), point(0.95, 0.12))).toMatch(/real calls .*12.0% against 10.0%/);
    // Too few held-out checks to place a point: refused whatever they say, naming how many of how many.
    expect(tooFewHeldOut(60, 200, 60)).toBeNull();
    expect(tooFewHeldOut(42, 135, 60)).toBe('the held-out check scored 42 of its 135 cases in its minutes, fewer than the 60 an operating point needs: its ranking and false-alarm rate would be noise');
  });
});

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
