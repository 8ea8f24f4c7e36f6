/**
 * The guard's options: one frozen set of defaults and a pure `resolveOptions` that validates with one
 * valibot schema and never mutates its input. Types: option-types.ts; environment and layering: option-sources.ts.
 */
import * as v from 'valibot';
import { InvalidOptionsError } from './errors.js';
import { describeType, formatIssuePath, isPlainObject } from './json.js';
import { DEFAULT_MINDGUARD_OPTIONS, resolveMindGuardOptions, type MindGuardOptions, type ResolvedMindGuardOptions } from './mindguard/options.js';
import type { GuardOptions, ResolvedDefenseOptions, ResolvedEdgeArmorRuleOptions, ResolvedGuardOptions } from './option-types.js';

export type * from './option-types.js';
export { ENV_VARIABLES, mergeOptions, optionsFromEnv } from './option-sources.js';

/** Default defense options. */
export const DEFAULT_DEFENSE_OPTIONS: Readonly<ResolvedDefenseOptions> = Object.freeze({
  maxRegenerations: 2,
  sanitize: true,
  maskReasoning: true,
  redactionText: '[Removed: instructions in a tool result]',
  withheldText: '[Tool result withheld: it was flagged as a prompt injection]',
  sentenceDeltaThreshold: 0,
  maxRedactedSentences: null,
});

/** Default 'edgearmor' rule parameters (not yet calibrated on data). */
export const DEFAULT_EDGEARMOR_RULE_OPTIONS: Readonly<ResolvedEdgeArmorRuleOptions> = Object.freeze({
  nameWeight: 1,
  argumentsWeight: 0.5,
  userFloor: 0,
});

/**
 * MindGuard inside the guard: the paper's defaults except the AIR threshold, calibrated to ~5% false
 * positives on the generator's validation split (`npm run eval -- data/validation.jsonl`, method
 * `edgearmor/mindguard`). Rechecked 2026-11-23 with the current embedded model: AIR ranks poisoned above
 * clean tool lists with ROC-AUC 0.96 there; 2.2 flags 37% of poisoned calls at 0.3% false positives (1.3% on
 * AgentDojo guard cases cut from held-out training runs). Leave-one-out over descriptions catches 95% there,
 * and lower AIR thresholds added 3 points of recall for 4 of false positives, so 2.2 stays a second opinion.
 * Pass `toolPoisoning.mindguard.airThreshold: 0.5` for the paper's operating point.
 */
const GUARD_MINDGUARD_OPTIONS: ResolvedMindGuardOptions = Object.freeze({ ...DEFAULT_MINDGUARD_OPTIONS, airThreshold: 2.2 });

/** The one frozen set of defaults. */
export const DEFAULT_GUARD_OPTIONS: Readonly<ResolvedGuardOptions> = Object.freeze({
  tau: -0.1,
  userWeight: 2,
  rule: 'causalarmor',
  edgearmorRule: DEFAULT_EDGEARMOR_RULE_OPTIONS,
  userRequest: 'all',
  untrustedTools: null,
  trustedTools: null,
  privilegedTools: null,
  maskCotForScoring: true,
  cotRedactionText: '[Reasoning redacted]',
  actionText: 'template',
  onError: 'block',
  timeoutMs: 30_000,
  maxContextTokens: null,
  truncatedSpans: 'report',
  groupAblation: true,
  groupMargin: 0,
  defense: DEFAULT_DEFENSE_OPTIONS,
  toolPoisoning: Object.freeze({
    leaveOneOut: true,
    leaveOneOutMargin: -0.05,
    attention: true,
    mindguard: GUARD_MINDGUARD_OPTIONS,
    beforeToolResults: Object.freeze({ airThreshold: 0.81, leaveOneOutMargin: 0.26 }),
  }),
} satisfies ResolvedGuardOptions);

// Issue messages carry what is allowed; a message starting with WHOLE is the whole reason, and one
// starting with KNOWN lists the known keys of an object (valibot reports an unknown key with it).
const WHOLE = '\u0001';
const KNOWN = '\u0002';

const finite = v.pipe(v.number('a finite number'), v.finite('a finite number'));
const nonNegative = v.pipe(finite, v.minValue(0, 'a number >= 0'));
const integerFrom = (min: number) => v.pipe(v.number(`an integer >= ${min}`), v.integer(`an integer >= ${min}`), v.minValue(min, `an integer >= ${min}`));
const flag = v.boolean('true or false');
const oneOf = <const T extends string>(values: readonly T[]) => v.picklist(values, values.map((a) => `"${a}"`).join(' | '));
const text = v.pipe(v.string('a non-empty string'), v.check((s: string) => s.trim() !== '', 'a non-empty string'));
/** An integer >= 1, or null / undefined for the default (filled in by resolveOptions: valibot leaves an absent optional key out). */
const optionalCount = v.nullish(integerFrom(1));

/** A list of tool names; empty is refused because its literal meaning is unsafe or ambiguous (`emptyMeaning` says how). */
const toolList = (emptyMeaning: string) =>
  v.optional(
    v.pipe(
      v.custom<string[]>((x) => Array.isArray(x) && x.every((s) => typeof s === 'string' && s !== ''), 'an array of non-empty tool names'),
      v.check((a: string[]) => a.length > 0, `${WHOLE}received an empty list, which would ${emptyMeaning}; omit the option instead.`),
      v.transform((a: string[]) => [...new Set(a)]),
    ),
  );

/** A plain object with exactly these keys (each optional, with its default). */
function group<const E extends v.ObjectEntries>(entries: E) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, 'an object'), v.strictObject(entries, `${KNOWN}${Object.keys(entries).join(', ')}`));
}

const d = DEFAULT_GUARD_OPTIONS;
const dd = DEFAULT_DEFENSE_OPTIONS;
const dr = DEFAULT_EDGEARMOR_RULE_OPTIONS;
const dt = DEFAULT_GUARD_OPTIONS.toolPoisoning;

const RuleSchema = v.pipe(
  group({ nameWeight: v.optional(nonNegative, dr.nameWeight), argumentsWeight: v.optional(nonNegative, dr.argumentsWeight), userFloor: v.optional(finite, dr.userFloor) }),
  v.check((r) => r.nameWeight + r.argumentsWeight > 0, `${WHOLE}nameWeight and argumentsWeight are both 0; at least one must be > 0.`),
);

const DefenseSchema = group({
  maxRegenerations: v.optional(integerFrom(0), dd.maxRegenerations),
  sanitize: v.optional(flag, dd.sanitize),
  maskReasoning: v.optional(flag, dd.maskReasoning),
  redactionText: v.optional(text, dd.redactionText),
  withheldText: v.optional(text, dd.withheldText),
  sentenceDeltaThreshold: v.optional(finite, dd.sentenceDeltaThreshold),
  maxRedactedSentences: optionalCount,
});

/** MindGuard's own options, resolved by MindGuard (its messages kept) with the guard's AIR threshold as the default. */
const MindGuardSchema = v.pipe(
  v.optional(v.unknown(), {}),
  v.rawTransform<unknown, ResolvedMindGuardOptions>(({ dataset, addIssue, NEVER }) => {
    try {
      return resolveMindGuardOptions({ airThreshold: GUARD_MINDGUARD_OPTIONS.airThreshold, ...((dataset.value ?? {}) as MindGuardOptions) });
    } catch (e) {
      addIssue({ message: `${WHOLE}${(e as Error).message}` });
      return NEVER;
    }
  }),
);

const ToolPoisoningSchema = group({
  leaveOneOut: v.optional(flag, dt.leaveOneOut),
  leaveOneOutMargin: v.optional(finite, dt.leaveOneOutMargin),
  attention: v.optional(flag, dt.attention),
  mindguard: MindGuardSchema,
  beforeToolResults: v.optional(
    group({ airThreshold: v.optional(nonNegative, dt.beforeToolResults.airThreshold), leaveOneOutMargin: v.optional(finite, dt.beforeToolResults.leaveOneOutMargin) }),
    {},
  ),
});

const GuardOptionsSchema = v.pipe(
  group({
    tau: v.optional(finite, d.tau),
    userWeight: v.optional(nonNegative, d.userWeight),
    rule: v.optional(oneOf(['causalarmor', 'edgearmor']), d.rule),
    edgearmorRule: v.optional(RuleSchema, {}),
    userRequest: v.optional(oneOf(['all', 'last']), d.userRequest),
    untrustedTools: toolList('trust every tool result and disable the guard'),
    trustedTools: toolList('mean the same as leaving it out'),
    privilegedTools: toolList('leave no call checked'),
    maskCotForScoring: v.optional(flag, d.maskCotForScoring),
    cotRedactionText: v.optional(text, d.cotRedactionText),
    actionText: v.optional(oneOf(['template', 'raw']), d.actionText),
    onError: v.optional(oneOf(['block', 'allow']), d.onError),
    timeoutMs: v.optional(integerFrom(1), d.timeoutMs),
    maxContextTokens: optionalCount,
    truncatedSpans: v.optional(oneOf(['report', 'fail']), d.truncatedSpans),
    groupAblation: v.optional(flag, d.groupAblation),
    groupMargin: v.optional(finite, d.groupMargin),
    defense: v.optional(DefenseSchema, {}),
    toolPoisoning: v.optional(ToolPoisoningSchema, {}),
  }),
  v.check(
    (o) => o.untrustedTools === undefined || o.trustedTools === undefined,
    `${WHOLE}received both untrustedTools and trustedTools; give at most one (untrustedTools lists exactly the untrusted tools, trustedTools removes tools from the default "all untrusted" set).`,
  ),
);

function shown(received: unknown): string {
  return typeof received === 'string' ? JSON.stringify(received) : typeof received === 'number' ? String(received) : describeType(received);
}

/** One message format for every option problem: what was received and what is allowed, at the option's dotted path. */
function optionsError(issue: v.BaseIssue<unknown>): InvalidOptionsError {
  const path = formatIssuePath(issue.path);
  if (issue.message.startsWith(KNOWN)) {
    const known = issue.message.slice(KNOWN.length);
    return new InvalidOptionsError(`Unknown option ${path}; known options are ${known}.`, { option: path, allowed: known.split(', ') });
  }
  if (issue.message.startsWith(WHOLE)) {
    const reason = issue.message.slice(WHOLE.length);
    return new InvalidOptionsError(path === '' ? `Invalid options: ${reason}` : `Invalid option ${path}: ${reason}`, { option: path === '' ? 'untrustedTools' : path });
  }
  const option = path === '' ? 'options' : path;
  return new InvalidOptionsError(`Invalid option ${option}: received ${shown(issue.input)}; allowed: ${issue.message}.`, { option, allowed: issue.message });
}

/** Validates user options and fills defaults; never mutates its input, and the result is plain cloneable data. */
export function resolveOptions(options: GuardOptions = {}): ResolvedGuardOptions {
  const result = v.safeParse(GuardOptionsSchema, options, { abortEarly: true });
  if (!result.success) throw optionsError(result.issues[0]);
  const { untrustedTools, trustedTools, privilegedTools, maxContextTokens, defense, ...rest } = result.output;
  // Options that may be left out or null: valibot leaves an absent optional key out, the resolved options hold the default.
  return {
    ...rest,
    untrustedTools: untrustedTools ?? null,
    trustedTools: trustedTools ?? null,
    privilegedTools: privilegedTools ?? null,
    maxContextTokens: maxContextTokens ?? d.maxContextTokens,
    defense: { ...defense, maxRedactedSentences: defense.maxRedactedSentences ?? dd.maxRedactedSentences },
  } as ResolvedGuardOptions;
}
