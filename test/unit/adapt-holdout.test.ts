/** How many held-out cases `edgearmor adapt` plants: sized by the time a check of the user's own calls takes (src/adapt/holdout.ts). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { holdoutSize, measureCheckSeconds } from '../../src/adapt/holdout.js';
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
  it('gives each guard about a tenth of the budget at the measured time a check, 60 to 300 cases', () => {
    expect(holdoutSize(30, 1)).toBe(180);
    expect(holdoutSize(45, 3)).toBe(90);
    expect(holdoutSize(30, 3)).toBe(60);
    expect(holdoutSize(30, 0.2)).toBe(300);
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
