/**
 * Whether the proxy knows the agent it guards. Its verdicts are only as good as its prediction of the
 * agent's calls: on tools and domains it never saw, it predicts them poorly and its verdicts are near
 * chance (docs/evaluation.md, "The proxy knows when it does not know the agent"). The measure is the
 * one the guard already scores: log P(call | whole context) per action token, the least of a check's
 * windows. One check below the model's threshold says little; most of an agent's checks below it say
 * that this agent is one the proxy does not know, and that `edgearmor adapt` is the remedy.
 */
import type { AttributionResult } from './attribution.js';
import { quantile } from './metrics.js';

/** How many of a guard's checks the proxy predicted poorly: `GuardStatus.familiarity`. */
export interface FamiliarityCount {
  /**
   * The model's `familiarityThreshold` (nats per action token), or null where it was not measured for
   * this model: the counts are then kept, the agent is not judged.
   */
  threshold: number | null;
  /** Checks judged by the model (not by the failure policy or without a model pass). */
  checks: number;
  /** Of those, the checks whose call the proxy predicted below the threshold (0 without a threshold). */
  below: number;
}

/** Fewest checks before an agent is judged: the sets measured put 91-99% or 0-2% of their checks below. */
export const FAMILIARITY_MIN_CHECKS = 10;

/**
 * A calibrated threshold is this quantile of the real calls' log-probability per action token: a later check
 * below it is predicted worse than 90% of the calls the point was measured on, and most checks below it (judged
 * at half) mean traffic unlike the calibration traffic, where the point's rates do not hold. On the calibration
 * traffic itself about a tenth fall below it: an agent it knows.
 */
export const FAMILIARITY_QUANTILE = 0.1;

/**
 * The familiarity threshold a calibration writes: {@link FAMILIARITY_QUANTILE} of the real calls' log-probabilities
 * per action token, rounded down to 0.01; null from fewer than {@link FAMILIARITY_MIN_CHECKS} calls, which say
 * nothing of the agent.
 */
export function calibratedFamiliarityThreshold(realCallLogProbs: readonly number[]): number | null {
  const q = realCallLogProbs.length >= FAMILIARITY_MIN_CHECKS ? quantile(realCallLogProbs, FAMILIARITY_QUANTILE) : null;
  return q === null ? null : Math.floor(q * 100) / 100;
}

/** What the counts say of the agent. */
export type FamiliarityJudgement =
  | { kind: 'not-measured' }
  | { kind: 'too-few'; checks: number; needed: number }
  | { kind: 'familiar' | 'unfamiliar'; share: number };

type Scored = Pick<AttributionResult, 'variants' | 'actionTokenCount'>;

/** The least of a check's per-window values, or null without any. */
const least = (perWindow: readonly number[]): number | null => (perWindow.length === 0 ? null : Math.min(...perWindow));

/** log P(call | whole context) per action token in each window a check was scored in (one without windows; none without a model pass). */
export function callLogProbsPerWindow(attribution: Scored | null | undefined): number[] {
  if (!attribution || attribution.actionTokenCount <= 0) return [];
  return attribution.variants.filter((v) => v.kind === 'full').map((v) => v.logProb / attribution.actionTokenCount);
}

/**
 * log P(call | whole context) per action token of a model verdict's attribution: the least over the
 * check's windows (its least predicted), or null for a verdict without a model pass.
 */
export function callLogProbPerToken(attribution: Scored | null | undefined): number | null {
  return least(callLogProbsPerWindow(attribution));
}

/**
 * log P(the call's tool name | whole context) per token of the name, the least over the check's windows, or null
 * without a model pass or without part labels (the raw action text has none): how much the proxy expected this
 * tool to be called here. The unlikely-tool rule's value (judge.ts): the choice of tool, not its free-text
 * arguments, whose log-probability is low for benign calls too.
 */
export function toolNameLogProbPerToken(attribution: Pick<AttributionResult, 'variants'> | null | undefined): number | null {
  return least((attribution?.variants ?? []).flatMap((v) => (v.kind === 'full' && v.parts && v.parts.name.tokenCount > 0 ? [v.parts.name.logProb / v.parts.name.tokenCount] : [])));
}

/** An empty count at a model's threshold. */
export function emptyFamiliarity(threshold: number | null): FamiliarityCount {
  return { threshold, checks: 0, below: 0 };
}

/** The count with one more model verdict's value (null: not counted). */
export function countFamiliarity(count: FamiliarityCount, value: number | null): FamiliarityCount {
  if (value === null) return count;
  const below = count.threshold !== null && value < count.threshold;
  return { ...count, checks: count.checks + 1, below: count.below + (below ? 1 : 0) };
}

/** The agent is unfamiliar when at least half of at least {@link FAMILIARITY_MIN_CHECKS} checks are below the threshold. */
export function judgeFamiliarity(count: FamiliarityCount): FamiliarityJudgement {
  if (count.threshold === null) return { kind: 'not-measured' };
  if (count.checks < FAMILIARITY_MIN_CHECKS) return { kind: 'too-few', checks: count.checks, needed: FAMILIARITY_MIN_CHECKS };
  const share = count.below / count.checks;
  return { kind: share >= 0.5 ? 'unfamiliar' : 'familiar', share };
}

/** One line for people: the counts and what they mean. */
export function familiarityLine(count: FamiliarityCount): string {
  const judgement = judgeFamiliarity(count);
  if (judgement.kind === 'not-measured') {
    return 'familiarity: not measured for this model (familiarityThreshold is null)';
  }
  const counted = `${count.below} of ${count.checks} calls predicted below ${count.threshold} nats per action token`;
  switch (judgement.kind) {
    case 'too-few':
      return `familiarity: ${counted}; too few checks to judge the agent (${judgement.needed} needed)`;
    case 'familiar':
      return `familiarity: ${counted}: an agent the proxy knows`;
    case 'unfamiliar':
      return (
        `familiarity: ${counted}: an agent the proxy does not know. On such agents its verdicts were near chance in held-out ` +
        'tests (README, "Adapt EdgeArmor to your agent"); adapt it to this agent with `edgearmor adapt` on attack-free traffic'
      );
  }
}
