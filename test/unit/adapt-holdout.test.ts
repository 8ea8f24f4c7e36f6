/** How many held-out cases `edgearmor adapt` plants: sized by the time a check of the user's own calls takes (src/adapt/holdout.ts). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { holdoutPlan, measureCheckSeconds } from '../../src/adapt/holdout.js';
import type { Guard } from '../../src/core/guard-api.js';
import type { GuardInput } from '../../src/core/types.js';

afterEach(() => vi.useRealTimers());

/** A guard whose checks take `seconds` each on a fake clock. */
function slowGuard(seconds: number, seen: unknown[]): Guard {
  return {
    check: async (input: unknown) => {
      seen.push(input);
      vi.setSystemTime(Date.now() + seconds * 1000);
      return {};
    },
  } as unknown as Guard;
}

describe('held-out cases for adapt', () => {
  it('plants the benign checks that place the target FPR to a standard error of half the target, and no more', () => {
    // 3%: (1 - 0.03) / (0.03 / 2)^2 = 4 x 0.97 / 0.03 = 129.3 -> 130 benign, / 0.65 -> 200 cases.
    const at3 = holdoutPlan(30, 0.2, 0.03);
    expect(at3).toMatchObject({ benignNeeded: 130, cases: 200, benign: 130, limitedBy: 'precision' });
    expect(at3.fprStandardError).toBeLessThanOrEqual(0.015);
    // 5%: 76 benign, 117 cases; a looser target needs fewer.
    expect(holdoutPlan(30, 0.2, 0.05)).toMatchObject({ benignNeeded: 76, cases: 117, limitedBy: 'precision' });
    // More budget buys no more held-out checks once the point is placed.
    expect(holdoutPlan(120, 0.2, 0.03).cases).toBe(200);
  });

  it('plants fewer when scoring them would take more than its share of the budget, and says the precision that leaves', () => {
    // 30 min x 8% = 144 s at 1.5 s a check: 96 cases.
    const slow = holdoutPlan(30, 1.5, 0.03);
    expect(slow).toMatchObject({ cases: 96, limitedBy: 'time' });
    expect(slow.fprStandardError).toBeGreaterThan(0.015);
    // Never under the floor of 60.
    expect(holdoutPlan(5, 3, 0.03)).toMatchObject({ cases: 60, limitedBy: 'floor' });
  });

  it('times the checks after the first, which loads the model, on at most three calls', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const seen: unknown[] = [];
    const inputs = ['a', 'b', 'c', 'd'].map((id) => ({ id }) as unknown as GuardInput);
    expect(await measureCheckSeconds(slowGuard(3, seen), inputs)).toBe(3);
    expect(seen).toEqual(inputs.slice(0, 3));
    expect(await measureCheckSeconds(slowGuard(3, []), [])).toBe(0.5);
  });
});
