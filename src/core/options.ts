/**
 * The guard's options: their one declaration is option-registry.ts; this module compiles it into the
 * frozen defaults, the inferred types and `resolveOptions`, which validates, reports every problem at
 * once, fills the defaults and never mutates its input. Environment and layering: option-sources.ts.
 */
import { InvalidOptionsError } from './errors.js';
import { GUARD_OPTIONS, type GuardOptions, type ResolvedGuardOptions } from './option-registry.js';
import { compileOptions, formatOptionIssues, type OptionIssue } from './option-schema.js';

export { ENV_VARIABLES, mergeOptions, optionsFromEnv } from './option-sources.js';
export { GUARD_OPTIONS, type GuardOptions, type ResolvedGuardOptions } from './option-registry.js';
export { formatOptionIssue, formatOptionIssues, optionEntries, type OptionIssue } from './option-schema.js';

/** Options of the defense pipeline (sanitise, mask, regenerate, re-check). */
export type DefenseOptions = NonNullable<GuardOptions['defense']>;
export type ResolvedDefenseOptions = ResolvedGuardOptions['defense'];
/** Parameters of the 'edgearmor' rule, which scores tool-name and argument tokens separately. */
export type EdgeArmorRuleOptions = NonNullable<GuardOptions['edgearmorRule']>;
export type ResolvedEdgeArmorRuleOptions = ResolvedGuardOptions['edgearmorRule'];
/** Options of the tool-poisoning signals (MindGuard attention and leave-one-out over tool descriptions). */
export type ToolPoisoningOptions = NonNullable<GuardOptions['toolPoisoning']>;
export type ResolvedToolPoisoningOptions = ResolvedGuardOptions['toolPoisoning'];
/** Which detection rule turns deltas into flagged spans. */
export type DetectionRuleName = ResolvedGuardOptions['rule'];
/** Which user messages form the user request U that is ablated. */
export type UserRequestMode = ResolvedGuardOptions['userRequest'];
/** How the proposed action is rendered for scoring. */
export type ActionTextMode = ResolvedGuardOptions['actionText'];
/** What the guard decides for a privileged call when it cannot produce a verdict. */
export type FailurePolicy = ResolvedGuardOptions['onError'];
/** What a check whose untrusted span was cut to fit the window answers. */
export type TruncatedSpanPolicy = ResolvedGuardOptions['truncatedSpans'];

const compiled = compileOptions(GUARD_OPTIONS);

/** The one frozen set of defaults (deeply frozen). */
export const DEFAULT_GUARD_OPTIONS: Readonly<ResolvedGuardOptions> = compiled.defaults;
/** Default defense options. */
export const DEFAULT_DEFENSE_OPTIONS: Readonly<ResolvedDefenseOptions> = DEFAULT_GUARD_OPTIONS.defense;
/** Default 'edgearmor' rule parameters (not yet calibrated on data). */
export const DEFAULT_EDGEARMOR_RULE_OPTIONS: Readonly<ResolvedEdgeArmorRuleOptions> = DEFAULT_GUARD_OPTIONS.edgearmorRule;

/** The typed error for option issues: the first in `option` and `allowed`, all of them in `issues`. */
export function invalidOptionsError(issues: readonly OptionIssue[]): InvalidOptionsError {
  const [first] = issues;
  return new InvalidOptionsError(formatOptionIssues(issues), { option: first!.path === '' ? 'options' : first!.path, allowed: first!.allowed, issues: issues.map((i) => ({ ...i })) });
}

/** Validates user options and fills defaults; never mutates its input, and the result is plain cloneable data. */
export function resolveOptions(options: GuardOptions = {}): ResolvedGuardOptions {
  const result = compiled.parse(options);
  if (!result.ok) throw invalidOptionsError(result.issues);
  return result.value;
}
