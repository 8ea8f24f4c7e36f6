/** How many held-out cases `edgearmor adapt` plants: sized by the time a check of the user's own calls takes (src/adapt/holdout.ts). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { holdoutPlan, measureCheckSeconds, Pace, SCORING_SHARE, scoreByConversation, scoringPlan, type HoldoutCase } from '../../src/adapt/holdout.js';
import type { ConductorGuard } from '../../src/core/conductor.js';
import { resolveOptions } from '../../src/core/options.js';
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

  it('gives screening what the scoring third leaves after both held-out passes and the probe, so the three together take a third', () => {
    // Slack at 30 minutes (2,349 calls): the base's pass took 2.5 minutes, the probe ~0.5. The third is 10:
    // screening 10 - 2 x 2.5 - 0.5 = 4.5 (its 20% share would have been 6, which made 10.6 minutes, 35%).
    const slack = scoringPlan(30, 2.5, 0.5);
    expect(slack.screen).toBeCloseTo(4.5, 9);
    // The adapted pass and the probe end at the third, less 1% for the last checks' spread.
    expect(2.5 + slack.screen + slack.adaptedAndProbe(slack.screen)).toBeCloseTo(0.99 * 30 * SCORING_SHARE, 9);
    // Banking at 30 minutes: a 3.9-minute base pass leaves screening 1.7 (it took 4.8, and the three 12.0, 40%).
    expect(scoringPlan(30, 3.9, 0.5).screen).toBeCloseTo(1.7, 9);
    // A quick base pass leaves screening its 20% share, and no more: the rest is training's.
    expect(scoringPlan(60, 1, 0.5).screen).toBe(12);
    // A screening that ran over its minutes (one conversation in flight) shortens the adapted pass, never the budget.
    expect(scoringPlan(30, 2.5, 0.5).adaptedAndProbe(5.5)).toBeCloseTo(1.9, 9);
    // A base pass that took the third leaves nothing to screen, not a negative time.
    expect(scoringPlan(10, 2, 0.5).screen).toBe(0);
    expect(scoringPlan(10, 4, 0.5).adaptedAndProbe(0)).toBe(0);
  });

  it('paces a pass by what its work cost so far: a piece starts only where it would end by the deadline', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const pace = new Pace();
    // Before any work: whether the deadline is still ahead.
    expect(pace.fits(1e9, Date.now() + 1)).toBe(true);
    expect(pace.fits(1, Date.now() - 1)).toBe(false);
    // A deadline that has come is spent, however little the work: a zero share starts nothing.
    expect(pace.fits(0, Date.now())).toBe(false);
    vi.setSystemTime(Date.now() + 10_000);
    pace.done(100);
    // 100 ms a unit: 50 more take 5 s.
    expect(pace.fits(50, Date.now() + 5_000)).toBe(true);
    expect(pace.fits(51, Date.now() + 5_000)).toBe(false);
    // With a guess, the first piece is held to it: two checks of ~1 s a probe case.
    const guessed = new Pace(2_000);
    expect(guessed.fits(1, Date.now() + 2_000)).toBe(true);
    expect(guessed.fits(1, Date.now() + 1_999)).toBe(false);
  });

  it('stops a held-out pass before a conversation that would run past its deadline, not after it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const input: GuardInput = { messages: [{ role: 'user', content: 'q' }], action: { name: 'f', arguments: {} } };
    const cases: HoldoutCase[] = [
      ...['a', 'b'].flatMap((conversation) => (['injected', 'benign'] as const).map((label, i) => ({ id: `${conversation}${i}`, conversation, label, kind: label, input }))),
      // A long conversation last, as banking's 22-case one: 10 cases at a second each.
      ...Array.from({ length: 10 }, (_, i) => ({ id: `c${i}`, conversation: 'c', label: 'benign' as const, kind: 'benign', input })),
    ];
    const checked: number[] = [];
    const guard = {
      checkMany: async (inputs: unknown[]) => {
        checked.push(inputs.length);
        vi.setSystemTime(Date.now() + 1000 * inputs.length);
        return inputs.map(() => ({ decision: 'allow', reason: 'failure-policy', attribution: null, toolPoisoning: null }));
      },
    } as unknown as ConductorGuard;
    const deadline = Date.now() + 5_000;
    const scored = await scoreByConversation(guard, cases, resolveOptions(), () => undefined, undefined, deadline);
    // a and b end at 4 s; c would take 10 s more at that pace: not started (it would have ended at 14 s).
    expect(checked).toEqual([2, 2]);
    expect(scored.map((x) => x.c.id)).toEqual(['a0', 'a1', 'b0', 'b1']);
    expect(Date.now()).toBeLessThanOrEqual(deadline);
    // With the time for it, the long conversation is scored whole.
    checked.length = 0;
    expect(await scoreByConversation(guard, cases, resolveOptions(), () => undefined, undefined, Date.now() + 20_000)).toHaveLength(14);
    expect(checked).toEqual([2, 2, 10]);
  });
});
