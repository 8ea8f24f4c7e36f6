/** Whether an adapted model earns its place: compared with its base on the same held-out checks. */
import type { OperatingPoint } from './calibration.js';

const fmt = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/**
 * How an adapted model's point is worse than the base's on the same held-out checks, or null: it ranks
 * injections against the agent's real calls worse (ROC-AUC), or blocks more of the real calls.
 */
export function worseThanBase(base: OperatingPoint, adapted: OperatingPoint): string | null {
  if ((adapted.rocAuc ?? 0) < (base.rocAuc ?? 0)) {
    return `the adapted model ranks held-out injections against the traffic's real calls worse than the base (ROC-AUC ${fmt(adapted.rocAuc)} against ${fmt(base.rocAuc)})`;
  }
  if (adapted.realFpr > base.realFpr) return `the adapted model blocks more of the held-out real calls than the base (${pct(adapted.realFpr)} against ${pct(base.realFpr)})`;
  return null;
}

/**
 * Why the held-out checks an adapted model was compared on are too few to write it, or null: under `least`
 * (adapt's floor of planted cases) the ranking and the false-alarm rate are noise, and a point chosen on them
 * can block most of the agent's calls elsewhere (docs/adapt.md has such a run).
 */
export function tooFewHeldOut(scored: number, planted: number, least: number): string | null {
  if (scored >= least) return null;
  return `the held-out check scored ${scored} of its ${planted} cases in its minutes, fewer than the ${least} an operating point needs: its ranking and false-alarm rate would be noise`;
}
