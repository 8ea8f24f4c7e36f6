/** What adapt tells a user after its run: why a refused model fell short and what to try, or what an accepted one bought. */
import { describe, expect, it } from 'vitest';
import { adaptAdvice, FEW_TRAINING_STEPS, SMALL_TRAFFIC } from '../../src/adapt/advice.js';
import type { AdaptReport } from '../../src/adapt/types.js';
import type { OperatingPoint } from '../../src/core/calibration.js';

const point = (tpr: number, realFpr: number, rocAuc: number): OperatingPoint =>
  ({ tpr, fpr: realFpr, forcedFpr: 0, realFpr, conversationFpr: realFpr, rocAuc, injected: 40, benign: 60, userWeight: 2, tau: -0.1 }) as OperatingPoint;

/** The parts of a report the advice reads; a run that screened everything and trained plenty on ample traffic by default. */
function report(over: { refusal?: string | null; unscreened?: number; steps?: number; withToolCalls?: number; gflops?: number; heldOutScored?: number } = {}): AdaptReport {
  return {
    refusal: over.refusal === undefined ? null : over.refusal,
    traffic: { file: 'logs/agent.jsonl', withToolCalls: over.withToolCalls ?? 600, trainConversations: 480, usedConversations: 480 - (over.unscreened ?? 0), unscreenedConversations: over.unscreened ?? 0 },
    training: { steps_done: over.steps ?? 400 },
    holdout: {
      cases: 200,
      scored: { base: 200, adapted: over.heldOutScored ?? 200 },
      plan: { secondsPerCheck: 0.355 },
      baseRecalibrated: point(0.5, 0.05, 0.7),
      adapted: over.refusal ? point(0.45, 0.05, 0.68) : point(0.8, 0.02, 0.9),
    },
    minutes: { screen: 9, train: 16.1, score: 3, holdoutBase: 1.2, holdoutAdapted: 1.3, total: 29, budget: 30 },
    machine: { matmulGflops: over.gflops ?? 40, blas: 'open', threads: 2, gpu: null, device: 'cpu' },
  } as unknown as AdaptReport;
}

describe("adapt's advice", () => {
  it('says what an accepted model bought against the base recalibrated to the same target', () => {
    expect(adaptAdvice(report())).toEqual(['bought, on the held-out traffic against the base recalibrated to the same target: injected blocked 50.0% -> 80.0%, real calls blocked 5.0% -> 2.0%, ROC-AUC 0.700 -> 0.900']);
  });

  it('names each part of a refused run that fell short, with what to try, and calibrate as the fallback', () => {
    const lines = adaptAdvice(report({ refusal: 'worse', unscreened: 403, steps: 6, withToolCalls: SMALL_TRAFFIC - 1, gflops: 0.8 }));
    expect(lines[0]).toBe('what to try:');
    expect(lines).toContain('  - screening reached 77 of 480 training conversations in 9.0 minutes: give more --minutes, or --screen off for traffic you know holds no attack');
    expect(lines).toContain("  - training made 6 steps in 16.1 minutes: give more --minutes and give torch a fast BLAS (the warning above says how)");
    expect(lines).toContain(`  - log more traffic: ${SMALL_TRAFFIC - 1} conversations with tool calls; several hundred teach more`);
    expect(lines.at(-1)).toMatch(/edgearmor calibrate logs\/agent\.jsonl --out <dir> \(ROC-AUC stays the base's 0\.700/);
  });

  it('after a run that lacked nothing it can name, still points at calibrate rather than saying nothing', () => {
    const lines = adaptAdvice(report({ refusal: 'worse', steps: FEW_TRAINING_STEPS }));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^ {2}- or keep the base model at a point chosen on your traffic: edgearmor calibrate/);
  });

  it('says when held-out scoring ran out of minutes before its planted cases, which a point needs', () => {
    const lines = adaptAdvice(report({ refusal: 'too few', heldOutScored: 42 }));
    expect(lines).toContain('  - held-out scoring reached 42 of 200 planted cases in 2.5 minutes (the two passes, at ~0.4 s a check of your calls, more for a planted one): give more --minutes');
    expect(adaptAdvice(report({ refusal: 'worse' })).some((l) => l.includes('held-out scoring reached'))).toBe(false);
  });
});
