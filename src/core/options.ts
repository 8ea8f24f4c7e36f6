import { DEFAULT_MINDGUARD_OPTIONS, resolveMindGuardOptions, type MindGuardOptions, type ResolvedMindGuardOptions } from './mindguard/options.js';
import { InvalidOptionsError } from './errors.js';
import { describeType, isPlainObject } from './json.js';

/** Which detection rule turns deltas into flagged spans. */
export type DetectionRuleName = 'causalarmor' | 'edgearmor';

/** Which user messages form the user request U that is ablated. */
export type UserRequestMode = 'all' | 'last';

/** How the proposed action is rendered for scoring. */
export type ActionTextMode = 'template' | 'raw';

/** What the guard decides for a privileged call when it cannot produce a verdict. */
export type FailurePolicy = 'block' | 'allow';

/** Parameters of the 'edgearmor' rule, which scores tool-name and argument tokens separately. */
export interface EdgeArmorRuleOptions {
  /**
   * Weight of the tool-name part of the comparison (dS_name - dU_name).
   * @defaultValue 1
   */
  nameWeight?: number | undefined;
  /**
   * Weight of the argument part of the comparison (dS_args - dU_args); lower than the name weight because benign calls copy argument values from tool results.
   * @defaultValue 0.5
   */
  argumentsWeight?: number | undefined;
  /**
   * Floor applied to every user delta before comparison, so a negative dU cannot make any positive span delta look dominant.
   * @defaultValue 0
   */
  userFloor?: number | undefined;
}

/** Options of the defense pipeline (sanitise, mask, regenerate, re-check). */
export interface DefenseOptions {
  /**
   * How many times the agent is asked for a new call after a detection; 0 blocks at once.
   * @defaultValue 2
   */
  maxRegenerations?: number | undefined;
  /**
   * Whether flagged spans are sanitised before regeneration.
   * @defaultValue true
   */
  sanitize?: boolean | undefined;
  /**
   * Whether assistant text after the earliest flagged span is redacted before regeneration.
   * @defaultValue true
   */
  maskReasoning?: boolean | undefined;
  /**
   * Text that replaces each redacted sentence of a flagged span.
   * @defaultValue '[Removed: instructions in a tool result]'
   */
  redactionText?: string | undefined;
  /**
   * Text that replaces a whole flagged span when sanitisation is on but no sanitizer is available or it failed.
   * @defaultValue '[Tool result withheld: it was flagged as a prompt injection]'
   */
  withheldText?: string | undefined;
  /**
   * Minimum normalised leave-one-out delta for a sentence of a flagged span to be redacted.
   * @defaultValue 0
   */
  sentenceDeltaThreshold?: number | undefined;
  /**
   * Most sentences redacted per span; null means no limit.
   * @defaultValue null
   */
  maxRedactedSentences?: number | null | undefined;
}

/** Options of the tool-poisoning signals (MindGuard attention and leave-one-out over tool descriptions). */
export interface ToolPoisoningOptions {
  /**
   * Score the action without each registered tool's description (one more variant per tool, in the same batch).
   * @defaultValue true
   */
  leaveOneOut?: boolean | undefined;
  /**
   * Extra margin a tool description's normalised delta must clear over the user's (dT - dU > margin - tau).
   * With the default tau (-0.1), -0.05 flags a description when dT - dU > 0.05: 95% of the generator
   * validation split's poisoned calls at 1.4% false positives with the embedded model (none on AgentDojo
   * guard cases cut from held-out training runs; measured 2026-11-23).
   * @defaultValue -0.05
   */
  leaveOneOutMargin?: number | undefined;
  /**
   * Read the proxy's attention rows from the full-context pass and build MindGuard's decision-dependence graph.
   * @defaultValue true
   */
  attention?: boolean | undefined;
  /**
   * MindGuard's own options (sigma, head pooling, sink filter, AIR threshold); see core/mindguard/options.ts.
   * @defaultValue {}
   */
  mindguard?: MindGuardOptions | undefined;
  /**
   * The two thresholds for calls made before any tool result (an agent's first calls), where only tool
   * poisoning can drive a call. Each signal alone flags at most 2.5% of the generator validation split's
   * clean first calls with the embedded model at the default tau (the margin, like leaveOneOutMargin, is
   * relative to tau), together 4.7% (`npx tsx eval/calibrate-first-calls.ts`,
   * measured 2026-11-23; 7.5% of the test split's). How much first-call poisoning they catch is not
   * measured: the generator has no such conversations yet.
   * @defaultValue { airThreshold: 0.81, leaveOneOutMargin: 0.26 }
   */
  beforeToolResults?: { airThreshold?: number | undefined; leaveOneOutMargin?: number | undefined } | undefined;
}

/** User options of the guard; every field is optional. */
export interface GuardOptions {
  /**
   * Margin of the detection rule: span i is flagged iff dS_i > userWeight x dU - tau (strict, per the seeds).
   * The seeds' default, 0, flags the most; -0.1 is the embedded model's calibrated operating point: the best
   * mean of (TPR - FPR) over the generator's validation split and AgentDojo guard cases cut from held-out
   * training runs (0.80 vs 0.74 at 0, where 30% of those real agents' benign calls are blocked; measured
   * 2026-11-23, README "The detection rule"). Tool descriptions' margins are relative to it as well.
   * @defaultValue -0.1
   */
  tau?: number | undefined;
  /**
   * Weight of the user request's delta in the 'causalarmor' rule: span i is flagged iff dS_i > userWeight x dU - tau.
   * 1 is the seeds' rule. 2 ranks injected above benign calls better on the generator's validation split and on
   * AgentDojo guard cases cut from held-out training runs (mean ROC-AUC 0.937 vs 0.930 with the model it was
   * chosen for; with the current one 2 and 3 are equal, see README "The detection rule"). Tool-result spans
   * only: tool descriptions keep the seeds' weighting.
   * @defaultValue 2
   */
  userWeight?: number | undefined;
  /**
   * Detection rule: 'causalarmor' is the seeds' rule on whole-action deltas; 'edgearmor' compares tool-name and argument deltas separately with a floor on dU.
   * @defaultValue 'causalarmor'
   */
  rule?: DetectionRuleName | undefined;
  /**
   * Parameters of the 'edgearmor' rule.
   * @defaultValue { nameWeight: 1, argumentsWeight: 0.5, userFloor: 0 }
   */
  edgearmorRule?: EdgeArmorRuleOptions | undefined;
  /**
   * 'all' ablates every user message together (agents repeat the user prompt after tool results); 'last' ablates only the last one, as the reference does.
   * @defaultValue 'all'
   */
  userRequest?: UserRequestMode | undefined;
  /**
   * When given, exactly these tools' results are untrusted; cannot be combined with trustedTools.
   * @defaultValue undefined (every tool result is untrusted)
   */
  untrustedTools?: string[] | undefined;
  /**
   * Tools whose results are trusted; every other tool result stays untrusted.
   * @defaultValue undefined (no tool is trusted)
   */
  trustedTools?: string[] | undefined;
  /**
   * Tools whose calls are checked; other calls are allowed with reason 'not-privileged'.
   * @defaultValue undefined (every call is checked)
   */
  privilegedTools?: string[] | undefined;
  /**
   * Redact assistant text after the first untrusted span before scoring (cot-propagation seed).
   * @defaultValue true
   */
  maskCotForScoring?: boolean | undefined;
  /**
   * Text that replaces redacted assistant reasoning.
   * @defaultValue '[Reasoning redacted]'
   */
  cotRedactionText?: string | undefined;
  /**
   * 'template' renders the action as a tool-call message in the proxy's chat template; 'raw' scores the agent's raw_text verbatim.
   * @defaultValue 'template'
   */
  actionText?: ActionTextMode | undefined;
  /**
   * Decision for a privileged call when the guard fails.
   * @defaultValue 'block'
   */
  onError?: FailurePolicy | undefined;
  /**
   * Time limit of one check in milliseconds.
   * @defaultValue 30000
   */
  timeoutMs?: number | undefined;
  /**
   * Most context tokens per scored variant; null means the model's own window.
   * @defaultValue null
   */
  maxContextTokens?: number | null | undefined;
  /**
   * Defense pipeline options.
   * @defaultValue see DEFAULT_DEFENSE_OPTIONS
   */
  defense?: DefenseOptions | undefined;
  /**
   * Tool-poisoning signals, used when the input lists its tools.
   * @defaultValue { leaveOneOut: true, leaveOneOutMargin: -0.05, attention: true, mindguard: {} }
   */
  toolPoisoning?: ToolPoisoningOptions | undefined;
}

/** Defense options after defaults. */
export interface ResolvedDefenseOptions {
  maxRegenerations: number;
  sanitize: boolean;
  maskReasoning: boolean;
  redactionText: string;
  withheldText: string;
  sentenceDeltaThreshold: number;
  maxRedactedSentences: number | null;
}

/** 'edgearmor' rule parameters after defaults. */
export interface ResolvedEdgeArmorRuleOptions {
  nameWeight: number;
  argumentsWeight: number;
  userFloor: number;
}

/** Guard options after defaults and validation: plain data that survives structuredClone. */
export interface ResolvedGuardOptions {
  tau: number;
  userWeight: number;
  rule: DetectionRuleName;
  edgearmorRule: ResolvedEdgeArmorRuleOptions;
  userRequest: UserRequestMode;
  untrustedTools: string[] | null;
  trustedTools: string[] | null;
  privilegedTools: string[] | null;
  maskCotForScoring: boolean;
  cotRedactionText: string;
  actionText: ActionTextMode;
  onError: FailurePolicy;
  timeoutMs: number;
  maxContextTokens: number | null;
  defense: ResolvedDefenseOptions;
  toolPoisoning: ResolvedToolPoisoningOptions;
}

/** Tool-poisoning options after defaults and validation. */
export interface ResolvedToolPoisoningOptions {
  leaveOneOut: boolean;
  leaveOneOutMargin: number;
  attention: boolean;
  mindguard: ResolvedMindGuardOptions;
  beforeToolResults: { airThreshold: number; leaveOneOutMargin: number };
}

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
  defense: DEFAULT_DEFENSE_OPTIONS,
  toolPoisoning: Object.freeze({
    leaveOneOut: true,
    leaveOneOutMargin: -0.05,
    attention: true,
    mindguard: GUARD_MINDGUARD_OPTIONS,
    beforeToolResults: Object.freeze({ airThreshold: 0.81, leaveOneOutMargin: 0.26 }),
  }),
} satisfies ResolvedGuardOptions);

const GUARD_KEYS = Object.keys(DEFAULT_GUARD_OPTIONS);
const DEFENSE_KEYS = Object.keys(DEFAULT_DEFENSE_OPTIONS);
const RULE_KEYS = Object.keys(DEFAULT_EDGEARMOR_RULE_OPTIONS);

function fail(path: string, received: unknown, allowed: string): never {
  const shown = typeof received === 'string' ? JSON.stringify(received) : typeof received === 'number' ? String(received) : describeType(received);
  throw new InvalidOptionsError(`Invalid option ${path}: received ${shown}; allowed: ${allowed}.`, { option: path, allowed });
}

function checkKeys(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new InvalidOptionsError(`Unknown option ${path}${key}; known options are ${allowed.join(', ')}.`, { option: `${path}${key}`, allowed: [...allowed] });
    }
  }
}

function finiteNumber(value: unknown, fallback: number, path: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, value, 'a finite number');
  return value;
}

function nonNegativeNumber(value: unknown, fallback: number, path: string): number {
  const n = finiteNumber(value, fallback, path);
  if (n < 0) fail(path, n, 'a number >= 0');
  return n;
}

function integerInRange(value: unknown, fallback: number, path: string, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) fail(path, value, `an integer >= ${min}`);
  return value;
}

function boolean(value: unknown, fallback: boolean, path: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') fail(path, value, 'true or false');
  return value;
}

function literal<T extends string>(value: unknown, fallback: T, allowed: readonly T[], path: string): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) fail(path, value, allowed.map((a) => `"${a}"`).join(' | '));
  return value as T;
}

function nonEmptyString(value: unknown, fallback: string, path: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.trim() === '') fail(path, value, 'a non-empty string');
  return value;
}

function toolList(value: unknown, path: string, emptyMeaning: string): string[] | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) fail(path, value, 'an array of non-empty tool names');
  if (value.length === 0) {
    // An empty list is almost always a configuration slip, and its literal meaning is unsafe or ambiguous.
    throw new InvalidOptionsError(`Invalid option ${path}: received an empty list, which would ${emptyMeaning}; omit the option instead.`, { option: path });
  }
  return [...new Set(value as string[])];
}

function resolveRule(value: unknown): ResolvedEdgeArmorRuleOptions {
  if (value === undefined) return { ...DEFAULT_EDGEARMOR_RULE_OPTIONS };
  if (!isPlainObject(value)) fail('edgearmorRule', value, 'an object');
  checkKeys(value, RULE_KEYS, 'edgearmorRule.');
  const resolved = {
    nameWeight: nonNegativeNumber(value['nameWeight'], DEFAULT_EDGEARMOR_RULE_OPTIONS.nameWeight, 'edgearmorRule.nameWeight'),
    argumentsWeight: nonNegativeNumber(value['argumentsWeight'], DEFAULT_EDGEARMOR_RULE_OPTIONS.argumentsWeight, 'edgearmorRule.argumentsWeight'),
    userFloor: finiteNumber(value['userFloor'], DEFAULT_EDGEARMOR_RULE_OPTIONS.userFloor, 'edgearmorRule.userFloor'),
  };
  if (resolved.nameWeight + resolved.argumentsWeight === 0) {
    throw new InvalidOptionsError('Invalid option edgearmorRule: nameWeight and argumentsWeight are both 0; at least one must be > 0.', { option: 'edgearmorRule' });
  }
  return resolved;
}

function resolveDefense(value: unknown): ResolvedDefenseOptions {
  if (value === undefined) return { ...DEFAULT_DEFENSE_OPTIONS };
  if (!isPlainObject(value)) fail('defense', value, 'an object');
  checkKeys(value, DEFENSE_KEYS, 'defense.');
  const d = DEFAULT_DEFENSE_OPTIONS;
  const max = value['maxRedactedSentences'];
  return {
    maxRegenerations: integerInRange(value['maxRegenerations'], d.maxRegenerations, 'defense.maxRegenerations', 0),
    sanitize: boolean(value['sanitize'], d.sanitize, 'defense.sanitize'),
    maskReasoning: boolean(value['maskReasoning'], d.maskReasoning, 'defense.maskReasoning'),
    redactionText: nonEmptyString(value['redactionText'], d.redactionText, 'defense.redactionText'),
    withheldText: nonEmptyString(value['withheldText'], d.withheldText, 'defense.withheldText'),
    sentenceDeltaThreshold: finiteNumber(value['sentenceDeltaThreshold'], d.sentenceDeltaThreshold, 'defense.sentenceDeltaThreshold'),
    maxRedactedSentences: max === null || max === undefined ? d.maxRedactedSentences : integerInRange(max, 1, 'defense.maxRedactedSentences', 1),
  };
}

/** Validates user options and fills defaults; never mutates its input, and the result is plain cloneable data. */
export function resolveOptions(options: GuardOptions = {}): ResolvedGuardOptions {
  if (!isPlainObject(options)) fail('options', options, 'an object');
  const o = options as Record<string, unknown>;
  checkKeys(o, GUARD_KEYS, '');
  const d = DEFAULT_GUARD_OPTIONS;
  const untrustedTools = toolList(o['untrustedTools'], 'untrustedTools', 'trust every tool result and disable the guard');
  const trustedTools = toolList(o['trustedTools'], 'trustedTools', 'mean the same as leaving it out');
  if (untrustedTools !== null && trustedTools !== null) {
    throw new InvalidOptionsError(
      'Invalid options: received both untrustedTools and trustedTools; give at most one (untrustedTools lists exactly the untrusted tools, trustedTools removes tools from the default "all untrusted" set).',
      { option: 'untrustedTools' },
    );
  }
  const maxContextTokens = o['maxContextTokens'];
  return {
    tau: finiteNumber(o['tau'], d.tau, 'tau'),
    userWeight: nonNegativeNumber(o['userWeight'], d.userWeight, 'userWeight'),
    rule: literal(o['rule'], d.rule, ['causalarmor', 'edgearmor'], 'rule'),
    edgearmorRule: resolveRule(o['edgearmorRule']),
    userRequest: literal(o['userRequest'], d.userRequest, ['all', 'last'], 'userRequest'),
    untrustedTools,
    trustedTools,
    privilegedTools: toolList(o['privilegedTools'], 'privilegedTools', 'leave no call checked'),
    maskCotForScoring: boolean(o['maskCotForScoring'], d.maskCotForScoring, 'maskCotForScoring'),
    cotRedactionText: nonEmptyString(o['cotRedactionText'], d.cotRedactionText, 'cotRedactionText'),
    actionText: literal(o['actionText'], d.actionText, ['template', 'raw'], 'actionText'),
    onError: literal(o['onError'], d.onError, ['block', 'allow'], 'onError'),
    timeoutMs: integerInRange(o['timeoutMs'], d.timeoutMs, 'timeoutMs', 1),
    maxContextTokens: maxContextTokens === null || maxContextTokens === undefined ? d.maxContextTokens : integerInRange(maxContextTokens, 1, 'maxContextTokens', 1),
    defense: resolveDefense(o['defense']),
    toolPoisoning: resolveToolPoisoning(o['toolPoisoning']),
  };
}

function resolveToolPoisoning(value: unknown): ResolvedToolPoisoningOptions {
  const d = DEFAULT_GUARD_OPTIONS.toolPoisoning;
  if (value === undefined) return { ...d };
  if (!isPlainObject(value)) fail('toolPoisoning', value, 'an object');
  checkKeys(value, ['leaveOneOut', 'leaveOneOutMargin', 'attention', 'mindguard', 'beforeToolResults'], 'toolPoisoning.');
  let mindguard: ResolvedMindGuardOptions;
  try {
    mindguard = resolveMindGuardOptions({ airThreshold: GUARD_MINDGUARD_OPTIONS.airThreshold, ...((value['mindguard'] ?? {}) as MindGuardOptions) });
  } catch (e) {
    throw new InvalidOptionsError(`Invalid option toolPoisoning.mindguard: ${(e as Error).message}`, { option: 'toolPoisoning.mindguard' });
  }
  return {
    leaveOneOut: boolean(value['leaveOneOut'], d.leaveOneOut, 'toolPoisoning.leaveOneOut'),
    leaveOneOutMargin: finiteNumber(value['leaveOneOutMargin'], d.leaveOneOutMargin, 'toolPoisoning.leaveOneOutMargin'),
    attention: boolean(value['attention'], d.attention, 'toolPoisoning.attention'),
    mindguard,
    beforeToolResults: resolveBeforeToolResults(value['beforeToolResults']),
  };
}

function resolveBeforeToolResults(value: unknown): ResolvedToolPoisoningOptions['beforeToolResults'] {
  const d = DEFAULT_GUARD_OPTIONS.toolPoisoning.beforeToolResults;
  if (value === undefined) return { ...d };
  if (!isPlainObject(value)) fail('toolPoisoning.beforeToolResults', value, 'an object');
  checkKeys(value, ['airThreshold', 'leaveOneOutMargin'], 'toolPoisoning.beforeToolResults.');
  return {
    airThreshold: nonNegativeNumber(value['airThreshold'], d.airThreshold, 'toolPoisoning.beforeToolResults.airThreshold'),
    leaveOneOutMargin: finiteNumber(value['leaveOneOutMargin'], d.leaveOneOutMargin, 'toolPoisoning.beforeToolResults.leaveOneOutMargin'),
  };
}

type EnvParser = (raw: string, variable: string) => unknown;

const parseNumber: EnvParser = (raw, variable) => {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n)) {
    throw new InvalidOptionsError(`Invalid environment variable ${variable}: received "${raw}"; allowed: a finite number.`, { variable });
  }
  return n;
};

const parseBoolean: EnvParser = (raw, variable) => {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new InvalidOptionsError(`Invalid environment variable ${variable}: received "${raw}"; allowed: true/false, 1/0, yes/no, on/off.`, { variable });
};

const parseText: EnvParser = (raw) => raw;

const parseList: EnvParser = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

const parseNullableInteger: EnvParser = (raw, variable) => {
  const v = raw.trim().toLowerCase();
  if (v === '' || v === 'null' || v === 'none') return null;
  return parseNumber(raw, variable);
};

interface EnvEntry {
  path: readonly [string] | readonly ['defense' | 'edgearmorRule', string];
  suffixes: readonly string[];
  parse: EnvParser;
}

// Suffix lists: the first is the EDGEARMOR_ name; later ones are the reference's CAUSAL_ARMOR_ names.
const ENV_TABLE: readonly EnvEntry[] = [
  { path: ['tau'], suffixes: ['TAU', 'MARGIN_TAU'], parse: parseNumber },
  { path: ['userWeight'], suffixes: ['USER_WEIGHT'], parse: parseNumber },
  { path: ['rule'], suffixes: ['RULE'], parse: parseText },
  { path: ['userRequest'], suffixes: ['USER_REQUEST'], parse: parseText },
  { path: ['untrustedTools'], suffixes: ['UNTRUSTED_TOOLS'], parse: parseList },
  { path: ['trustedTools'], suffixes: ['TRUSTED_TOOLS'], parse: parseList },
  { path: ['privilegedTools'], suffixes: ['PRIVILEGED_TOOLS'], parse: parseList },
  { path: ['maskCotForScoring'], suffixes: ['MASK_COT_FOR_SCORING'], parse: parseBoolean },
  { path: ['cotRedactionText'], suffixes: ['COT_REDACTION_TEXT'], parse: parseText },
  { path: ['actionText'], suffixes: ['ACTION_TEXT'], parse: parseText },
  { path: ['onError'], suffixes: ['ON_ERROR'], parse: parseText },
  { path: ['timeoutMs'], suffixes: ['TIMEOUT_MS'], parse: parseNumber },
  { path: ['maxContextTokens'], suffixes: ['MAX_CONTEXT_TOKENS'], parse: parseNullableInteger },
  { path: ['edgearmorRule', 'nameWeight'], suffixes: ['RULE_NAME_WEIGHT'], parse: parseNumber },
  { path: ['edgearmorRule', 'argumentsWeight'], suffixes: ['RULE_ARGUMENTS_WEIGHT'], parse: parseNumber },
  { path: ['edgearmorRule', 'userFloor'], suffixes: ['RULE_USER_FLOOR'], parse: parseNumber },
  { path: ['defense', 'maxRegenerations'], suffixes: ['MAX_REGENERATIONS'], parse: parseNumber },
  { path: ['defense', 'sanitize'], suffixes: ['SANITIZE', 'ENABLE_SANITIZATION'], parse: parseBoolean },
  { path: ['defense', 'maskReasoning'], suffixes: ['MASK_REASONING', 'ENABLE_COT_MASKING'], parse: parseBoolean },
];

/** The environment variable names optionsFromEnv reads, EDGEARMOR_ names first, then CAUSAL_ARMOR_ aliases. */
export const ENV_VARIABLES: readonly string[] = Object.freeze(
  ENV_TABLE.flatMap((e) => [...e.suffixes.map((s) => `EDGEARMOR_${s}`), ...e.suffixes.map((s) => `CAUSAL_ARMOR_${s}`)]),
);

/** Reads options from EDGEARMOR_* variables, accepting the seeds' CAUSAL_ARMOR_* names as aliases (an EDGEARMOR_ name wins); unset or empty variables are ignored. */
export function optionsFromEnv(env: Readonly<Record<string, string | undefined>>): GuardOptions {
  const out: Record<string, unknown> = {};
  for (const entry of ENV_TABLE) {
    const candidates = [...entry.suffixes.map((s) => `EDGEARMOR_${s}`), ...entry.suffixes.map((s) => `CAUSAL_ARMOR_${s}`)];
    const variable = candidates.find((name) => {
      const v = env[name];
      return v !== undefined && v !== '';
    });
    if (variable === undefined) continue;
    const value = entry.parse(env[variable] as string, variable);
    if (entry.path.length === 1) {
      out[entry.path[0]] = value;
    } else {
      const [group, key] = entry.path;
      const nested = (out[group] as Record<string, unknown> | undefined) ?? {};
      nested[key] = value;
      out[group] = nested;
    }
  }
  return out as GuardOptions;
}

/** Merges option layers from highest to lowest precedence (e.g. flags, env, config file); nested groups merge key by key and undefined never overrides. */
export function mergeOptions(...layers: ReadonlyArray<GuardOptions | undefined>): GuardOptions {
  const out: Record<string, unknown> = {};
  // Walk from lowest to highest precedence so later writes win.
  for (const layer of [...layers].reverse()) {
    if (layer === undefined) continue;
    if (!isPlainObject(layer)) fail('options', layer, 'an object');
    // The two trust lists are one policy: a higher layer that sets either replaces both from lower layers.
    if (layer.untrustedTools !== undefined || layer.trustedTools !== undefined) {
      delete out['untrustedTools'];
      delete out['trustedTools'];
    }
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      if ((key === 'defense' || key === 'edgearmorRule' || key === 'toolPoisoning') && isPlainObject(value)) {
        const prev = isPlainObject(out[key]) ? (out[key] as Record<string, unknown>) : {};
        const next: Record<string, unknown> = { ...prev };
        for (const [k, v] of Object.entries(value)) if (v !== undefined) next[k] = v;
        out[key] = next;
      } else {
        out[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
      }
    }
  }
  return out as GuardOptions;
}
