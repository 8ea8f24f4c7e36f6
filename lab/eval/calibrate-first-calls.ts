/**
 * Calibrates `toolPoisoning.beforeToolResults` on the embedded model: the thresholds for calls made before
 * any tool result, where only tool poisoning can drive a call.
 *
 *   npx tsx lab/eval/calibrate-first-calls.ts [--n 215]
 *
 * Takes the first call of the generator's clean validation conversations (with the tools they had), scores
 * each once with both tool-poisoning signals, and picks, for each signal alone, the smallest threshold that
 * flags at most 2.5% of them (so the two together flag at most 5%), at the default tau (a description is
 * flagged when dT - dU > margin - tau). The test split's first calls are then scored with the chosen pair for
 * the record; nothing is chosen on them.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_GUARD_OPTIONS } from '../../src/core/index.js';
import { createNodeGuard } from '../../src/node.js';
import { cleanFirstCalls } from '../../src/scenarios/index.js';

const SPLIT_SEEDS: Record<'validation' | 'test', number> = { validation: 2, test: 3 };
const TARGET_PER_SIGNAL = 0.025;
// Thresholds no call reaches: the verdicts then carry both signals' raw values and flag nothing.
const NEVER = { airThreshold: 1e9, leaveOneOutMargin: 1e9 };

/** The smallest threshold t (from the scores themselves) with at most `share` of scores strictly above it. */
function thresholdAtShare(scores: number[], share: number): number {
  const sorted = [...scores].sort((a, b) => b - a);
  const allowed = Math.floor(share * sorted.length);
  return sorted[allowed] ?? 0;
}

async function signals(guard: ReturnType<typeof createNodeGuard>, inputs: ReturnType<typeof cleanFirstCalls>) {
  const air: number[] = [];
  const margin: number[] = [];
  for (const input of inputs) {
    const v = await guard.check(input);
    const tools = v.toolPoisoning?.leaveOneOut?.tools ?? [];
    const dU = v.attribution?.user.normalizedDelta ?? 0;
    air.push(v.toolPoisoning?.air ?? 0);
    margin.push(Math.max(...tools.map((t) => t.normalizedDelta - dU)));
  }
  return { air, margin };
}

const { values } = parseArgs({ options: { n: { type: 'string', default: '215' } } });
const n = Number(values.n);
if (!Number.isInteger(n) || n < 10) throw new Error(`--n must be an integer >= 10; received ${values.n}`);

const guard = createNodeGuard({ backends: ['node'], toolPoisoning: { beforeToolResults: NEVER } });
try {
  const val = await signals(guard, cleanFirstCalls('validation', SPLIT_SEEDS.validation, n));
  // Rounded up, so that rounding never lets a validation call over the line.
  const up = (x: number) => Math.ceil(x * 100) / 100;
  const airThreshold = up(thresholdAtShare(val.air, TARGET_PER_SIGNAL));
  const tau = DEFAULT_GUARD_OPTIONS.tau;
  const over = up(thresholdAtShare(val.margin, TARGET_PER_SIGNAL));
  const leaveOneOutMargin = Number((over + tau).toFixed(2));
  const rate = (s: { air: number[]; margin: number[] }, air: number, over: number) =>
    Number((s.air.filter((a, i) => a > air || s.margin[i]! > over).length / s.air.length).toFixed(3));
  // What the thresholds for calls after tool results would flag, for comparison.
  const after = DEFAULT_GUARD_OPTIONS.toolPoisoning;
  const afterRates = (s: { air: number[]; margin: number[] }) => rate(s, after.mindguard.airThreshold, after.leaveOneOutMargin - tau);
  const test = await signals(guard, cleanFirstCalls('test', SPLIT_SEEDS.test, 120));
  console.log(JSON.stringify({
    airThreshold,
    leaveOneOutMargin,
    tau,
    validation: { n, flagged: rate(val, airThreshold, over), flaggedByAfterResultsThresholds: afterRates(val) },
    test: { n: 120, flagged: rate(test, airThreshold, over), flaggedByAfterResultsThresholds: afterRates(test) },
  }));
} finally {
  await guard.dispose();
}
