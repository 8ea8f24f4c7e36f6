/**
 * Calls made before any tool result: only tool poisoning can drive them, and the guard judges them with
 * their own thresholds (toolPoisoning.beforeToolResults), calibrated on the generator's validation split
 * because the after-results thresholds flag far more clean first calls (lab/eval/calibrate-first-calls.ts). On
 * test-split first calls: each call is blocked exactly when a signal clears its first-call threshold, fewer are
 * blocked than with the after-results thresholds, and the verdict reports the threshold MindGuard used.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/core/index.js';
import { embeddedModelDir } from '../../src/engine/files-node.js';
import { createNodeGuard } from '../../src/node.js';
import { cleanFirstCalls } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';
import type { Verdict } from '../../src/core/verdict.js';

const MODEL_TIMEOUT_MS = 180_000;
const CASES = 24;
/** Calls also checked by a guard configured with the after-results thresholds (its scores are the same as the first guard's). */
const AFTER_GUARD_CASES = 4;

describe.skipIf(!requirement(existsSync(embeddedModelDir()), 'the embedded model'))('tool-poisoning checks before any tool result', () => {
  const guard = createNodeGuard({ backends: ['node'] });
  const asAfter = createNodeGuard({ backends: ['node'], toolPoisoning: { beforeToolResults: { airThreshold: 2.2, leaveOneOutMargin: -0.05 } } });
  afterAll(async () => {
    await guard.dispose();
    await asAfter.dispose();
  });

  it('judges first calls by their own thresholds, and flags fewer clean ones than the after-results thresholds would', async () => {
    const own: boolean[] = [];
    const after: boolean[] = [];
    // Blocked exactly when one of the two signals clears its threshold (no tool result: no spans); a
    // description must clear dT - dU > margin - tau (0.26 + 0.1 first; -0.05 + 0.1 after results).
    const blockedAt = (v: Verdict, air: number, margin: number) => {
      const dU = v.attribution!.user.normalizedDelta;
      return v.toolPoisoning!.air! > air || v.toolPoisoning!.leaveOneOut!.tools.some((t) => t.normalizedDelta - dU > margin + 0.1);
    };
    let i = 0;
    for (const input of cleanFirstCalls('test', 3, CASES)) {
      const a = await guard.check(input);
      expect(a.toolPoisoning?.attention?.threshold).toBe(0.81);
      expect(a.decision === 'block').toBe(blockedAt(a, 0.81, 0.26));
      own.push(a.decision === 'block');
      // The after-results thresholds see the same scores: the guard configured with them is run on the first
      // few calls, where its decision must follow the same scores; the rest are judged from a's scores.
      if (i++ < AFTER_GUARD_CASES) {
        const b = await asAfter.check(input);
        expect(b.toolPoisoning?.attention?.threshold).toBe(2.2);
        expect(b.decision === 'block').toBe(blockedAt(a, 2.2, -0.05));
      }
      after.push(blockedAt(a, 2.2, -0.05));
    }
    expect(own.filter(Boolean).length).toBeLessThan(after.filter(Boolean).length);
  }, MODEL_TIMEOUT_MS);

  it('resolves and validates the thresholds', () => {
    expect(resolveOptions({}).toolPoisoning.beforeToolResults).toEqual({ airThreshold: 0.81, leaveOneOutMargin: 0.26 });
    expect(resolveOptions({ toolPoisoning: { beforeToolResults: { airThreshold: 3 } } }).toolPoisoning.beforeToolResults).toEqual({ airThreshold: 3, leaveOneOutMargin: 0.26 });
    expect(() => resolveOptions({ toolPoisoning: { beforeToolResults: { airThreshold: -1 } } })).toThrow(/toolPoisoning.beforeToolResults.airThreshold: received -1; allowed: a number >= 0/);
    expect(() => resolveOptions({ toolPoisoning: { beforeToolResults: { air: 3 } as never } })).toThrow(/Unknown option toolPoisoning.beforeToolResults.air; known options are airThreshold, leaveOneOutMargin/);
  });
});
