/**
 * The detection rules: what flags one span from its leave-one-out delta and the user request's. Pure and
 * pluggable (attribution.ts applies the one the options select to every span and group).
 */
import type { ResolvedEdgeArmorRuleOptions, ResolvedGuardOptions } from './options.js';

/** A delta split into its whole-action value and its tool-name and argument parts (each normalised by its own token count; null when the part has no tokens). */
export interface DeltaParts {
  /** Normalised delta over all scored action tokens. */
  whole: number;
  /** Normalised delta over the tool-name tokens, or null without part labels or name tokens. */
  name: number | null;
  /** Normalised delta over the argument tokens, or null without part labels or argument tokens. */
  arguments: number | null;
}

/** What a detection rule sees for one span. */
export interface RuleInput {
  /** Deltas of removing U. */
  user: DeltaParts;
  /** Deltas of removing this span. */
  span: DeltaParts;
  /** The margin tau. */
  tau: number;
}

/** A rule's output for one span: the flag and a continuous score (higher = more span-driven). */
export interface RuleOutput {
  flagged: boolean;
  score: number;
}

/** A pluggable detection rule, applied to each span alone; it must be pure. */
export type DetectionRule = (input: RuleInput) => RuleOutput;

/** The 'causalarmor' rule with the user's delta weighted: flag span i iff dS_i > userWeight x dU - tau (strict); score = dS - userWeight x dU. */
export function createCausalArmorRule(userWeight: number): DetectionRule {
  return ({ user, span, tau }) => ({
    flagged: span.whole > userWeight * user.whole - tau,
    score: span.whole - userWeight * user.whole,
  });
}

/** The seeds' rule: flag span i iff dS_i > dU - tau (strict), on whole-action normalised deltas; score = dS - dU. */
export const causalArmorRule: DetectionRule = createCausalArmorRule(1);

/** Builds the 'edgearmor' rule: a weighted mix of the name-part and argument-part margins with dU floored; flag iff the mix > -tau. */
export function createEdgeArmorRule(params: ResolvedEdgeArmorRuleOptions): DetectionRule {
  const { nameWeight, argumentsWeight, userFloor } = params;
  return ({ user, span, tau }) => {
    const margin = (s: number, u: number): number => s - Math.max(u, userFloor);
    const terms: Array<[number, number]> = [];
    if (span.name !== null && user.name !== null && nameWeight > 0) terms.push([nameWeight, margin(span.name, user.name)]);
    if (span.arguments !== null && user.arguments !== null && argumentsWeight > 0) terms.push([argumentsWeight, margin(span.arguments, user.arguments)]);
    // Without part labels (or with an action that has no tokens in the weighted parts) fall back to whole-action deltas, floor still applied.
    const score =
      terms.length === 0 ? margin(span.whole, user.whole) : terms.reduce((acc, [w, m]) => acc + w * m, 0) / terms.reduce((acc, [w]) => acc + w, 0);
    return { flagged: score > -tau, score };
  };
}

/** Returns the built-in rule the resolved options select. */
export function ruleFromOptions(options: Pick<ResolvedGuardOptions, 'rule' | 'edgearmorRule' | 'userWeight'>): DetectionRule {
  if (options.rule === 'edgearmor') return createEdgeArmorRule(options.edgearmorRule);
  return options.userWeight === 1 ? causalArmorRule : createCausalArmorRule(options.userWeight);
}
