/**
 * What an adaptation's outcome means for the user: for a refused model, which part of the run fell short and
 * what to try; for an accepted one, what it bought on the held-out traffic against the base at the same target.
 */
import { SLOW_MATMUL_GFLOPS } from './machine.js';
import type { AdaptReport } from './types.js';

/** Fewer training steps than this rarely move a model: the slack runs that were refused made 52 and 6. */
export const FEW_TRAINING_STEPS = 100;

/** Fewer conversations with tool calls than this leave adaptation little to learn from. */
export const SMALL_TRAFFIC = 200;

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const auc = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));

/** The lines that follow the report's verdict: what to try after a refusal, or what an accepted model bought. */
export function adaptAdvice(r: AdaptReport): string[] {
  const base = r.holdout.baseRecalibrated;
  const adapted = r.holdout.adapted;
  if (r.refusal === null) {
    return [
      `bought, on the held-out traffic against the base recalibrated to the same target: injected blocked ${pct(base.tpr)} -> ${pct(adapted.tpr)}, ` +
        `real calls blocked ${pct(base.realFpr)} -> ${pct(adapted.realFpr)}, ROC-AUC ${auc(base.rocAuc)} -> ${auc(adapted.rocAuc)}`,
    ];
  }
  const t = r.traffic;
  const steps = Number(r.training['steps_done'] ?? 0);
  const tries: string[] = [];
  const h = r.holdout;
  if (h.scored.adapted < h.cases) {
    tries.push(
      `held-out scoring reached ${h.scored.adapted} of ${h.cases} planted cases in ${(r.minutes.holdoutBase + r.minutes.holdoutAdapted).toFixed(1)} minutes (the two passes, at ~${h.plan.secondsPerCheck.toFixed(1)} s a check of your calls, more for a planted one): give more --minutes`,
    );
  }
  if (t.unscreenedConversations > 0) {
    tries.push(
      `screening reached ${t.usedConversations} of ${t.trainConversations} training conversations in ${r.minutes.screen.toFixed(1)} minutes: give more --minutes, or --screen off for traffic you know holds no attack`,
    );
  }
  if (steps < FEW_TRAINING_STEPS) {
    const slow = r.machine.matmulGflops < SLOW_MATMUL_GFLOPS ? ' and give torch a fast BLAS (the warning above says how)' : '';
    tries.push(`training made ${steps} steps in ${r.minutes.train.toFixed(1)} minutes: give more --minutes${slow}`);
  }
  if (t.withToolCalls < SMALL_TRAFFIC) tries.push(`log more traffic: ${t.withToolCalls} conversations with tool calls; several hundred teach more`);
  tries.push(`or keep the base model at a point chosen on your traffic: edgearmor calibrate ${t.file} --out <dir> (ROC-AUC stays the base's ${auc(base.rocAuc)}, the false alarms come down)`);
  return ['what to try:', ...tries.map((x) => `  - ${x}`)];
}
