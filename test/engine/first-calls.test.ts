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

const MODEL_TIMEOUT_MS = 180_000;
const CASES = 24;

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
    for (const input of cleanFirstCalls('test', 3, CASES)) {
      const [a, b] = [await guard.check(input), await asAfter.check(input)];
      expect(a.toolPoisoning?.attention?.threshold).toBe(0.81);
      expect(b.toolPoisoning?.attention?.threshold).toBe(2.2);
      // Blocked exactly when one of the two signals clears its first-call threshold (no tool result: no
      // spans); a description must clear dT - dU > margin - tau = 0.26 + 0.1.
      const dU = a.attribution!.user.normalizedDelta;
      const overMargin = a.toolPoisoning!.leaveOneOut!.tools.some((t) => t.normalizedDelta - dU > 0.36);
      expect(a.decision === 'block').toBe(a.toolPoisoning!.air! > 0.81 || overMargin);
      own.push(a.decision === 'block');
      after.push(b.decision === 'block');
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
