/**
 * Whether the proxy knows the agent (core/familiarity.ts), in the pure core with golden values: the
 * per-check measure read from a verdict's attribution, the running count, the judgement and its line.
 */
import { describe, expect, it } from 'vitest';
import type { AttributionResult } from '../../src/core/attribution.js';
import { calibratedFamiliarityThreshold, callLogProbPerToken, callLogProbsPerWindow, countFamiliarity, emptyFamiliarity, familiarityLine, FAMILIARITY_MIN_CHECKS, FAMILIARITY_QUANTILE, judgeFamiliarity } from '../../src/core/familiarity.js';

type Scored = Pick<AttributionResult, 'variants' | 'actionTokenCount'>;
const variant = (kind: 'full' | 'no-user' | 'no-span', logProb: number) => ({ id: kind, kind, logProb }) as unknown as AttributionResult['variants'][number];

describe('callLogProbPerToken', () => {
  it("is the full context's log-probability per action token, the least of a check's windows", () => {
    const one: Scored = { actionTokenCount: 4, variants: [variant('full', -10), variant('no-user', -14), variant('no-span', -12)] };
    expect(callLogProbPerToken(one)).toBe(-2.5);
    // Two windows (a merged windowed verdict holds each window's full variant): the least predicted counts.
    const two: Scored = { actionTokenCount: 4, variants: [variant('full', -10), variant('no-user', -14), variant('full', -22)] };
    expect(callLogProbPerToken(two)).toBe(-5.5);
    expect(callLogProbsPerWindow(two)).toEqual([-2.5, -5.5]);
  });

  it('is null without a model pass: no attribution, no action tokens, no full variant', () => {
    expect(callLogProbPerToken(null)).toBeNull();
    expect(callLogProbPerToken(undefined)).toBeNull();
    expect(callLogProbPerToken({ actionTokenCount: 0, variants: [variant('full', -1)] })).toBeNull();
    expect(callLogProbPerToken({ actionTokenCount: 3, variants: [variant('no-user', -1)] })).toBeNull();
    expect(callLogProbsPerWindow(null)).toEqual([]);
  });
});

describe('the count and its judgement', () => {
  const counted = (threshold: number | null, values: Array<number | null>) => values.reduce(countFamiliarity, emptyFamiliarity(threshold));

  it('counts checks with a value, and those strictly below the threshold', () => {
    expect(counted(-4.92, [-6.8, -4.92, -2.1, null, -7.4])).toEqual({ threshold: -4.92, checks: 4, below: 2 });
    expect(counted(null, [-6.8, -7.4])).toEqual({ threshold: null, checks: 2, below: 0 });
  });

  it(`judges an agent from ${FAMILIARITY_MIN_CHECKS} checks: unfamiliar when at least half are below`, () => {
    expect(judgeFamiliarity(counted(-4.92, Array(9).fill(-7)))).toEqual({ kind: 'too-few', checks: 9, needed: 10 });
    expect(judgeFamiliarity(counted(-4.92, [...Array(5).fill(-7), ...Array(5).fill(-2)]))).toEqual({ kind: 'unfamiliar', share: 0.5 });
    expect(judgeFamiliarity(counted(-4.92, [...Array(4).fill(-7), ...Array(6).fill(-2)]))).toEqual({ kind: 'familiar', share: 0.4 });
    expect(judgeFamiliarity(counted(null, Array(50).fill(-7)))).toEqual({ kind: 'not-measured' });
  });

  it('says in one line what the counts mean, and what to do about an unfamiliar agent', () => {
    expect(familiarityLine(counted(-4.92, Array(12).fill(-7)))).toMatch(
      /^familiarity: 12 of 12 calls predicted below -4\.92 nats per action token: an agent the proxy does not know\. .*near chance.*edgearmor adapt/,
    );
    expect(familiarityLine(counted(-4.92, Array(12).fill(-1)))).toBe('familiarity: 0 of 12 calls predicted below -4.92 nats per action token: an agent the proxy knows');
    expect(familiarityLine(counted(-4.92, [-1, -7]))).toBe(
      'familiarity: 1 of 2 calls predicted below -4.92 nats per action token; too few checks to judge the agent (10 needed)',
    );
    expect(familiarityLine(counted(null, [-1]))).toBe('familiarity: not measured for this model (familiarityThreshold is null)');
  });
});

describe('calibratedFamiliarityThreshold', () => {
  it(`is the real calls' ${FAMILIARITY_QUANTILE * 100}% quantile rounded down to 0.01, and null from fewer than ${FAMILIARITY_MIN_CHECKS} calls`, () => {
    // -1 ... -10: numpy's linear quantile at 0.1 is -9.1 (between the two lowest, -10 and -9).
    const calls = Array.from({ length: 10 }, (_, i) => -(i + 1));
    expect(calibratedFamiliarityThreshold(calls)).toBe(-9.1);
    // -0.123: rounded down, never up, so the calls it was measured on stay at or above it.
    expect(calibratedFamiliarityThreshold(Array.from({ length: 20 }, () => -0.123))).toBe(-0.13);
    expect(calibratedFamiliarityThreshold(calls.slice(1))).toBeNull();
    expect(calibratedFamiliarityThreshold([])).toBeNull();
  });
});
