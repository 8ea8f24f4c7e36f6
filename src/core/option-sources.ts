/** Where options come from besides code: EDGEARMOR_* environment variables, and layers (flags, environment, config file) merged by precedence. */
import { InvalidOptionsError } from './errors.js';
import { describeType, isPlainObject } from './json.js';
import type { GuardOptions } from './option-types.js';

type EnvParser = (raw: string, variable: string) => unknown;

const parseNumber: EnvParser = (raw, variable) => {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n)) {
    throw new InvalidOptionsError(`Invalid environment variable ${variable}: received "${raw}"; allowed: a finite number.`, { variable });
  }
  return n;
};

/** The spellings of a boolean option outside code, the same for environment variables and CLI flags. */
export const BOOLEAN_SPELLINGS = 'true/false, 1/0, yes/no, on/off';

/** A boolean option's text (case and surrounding space ignored), or undefined when it spells none. */
export function booleanFromText(raw: string): boolean | undefined {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return undefined;
}

const parseBoolean: EnvParser = (raw, variable) => {
  const value = booleanFromText(raw);
  if (value === undefined) throw new InvalidOptionsError(`Invalid environment variable ${variable}: received "${raw}"; allowed: ${BOOLEAN_SPELLINGS}.`, { variable });
  return value;
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
  { path: ['truncatedSpans'], suffixes: ['TRUNCATED_SPANS'], parse: parseText },
  { path: ['groupAblation'], suffixes: ['GROUP_ABLATION'], parse: parseBoolean },
  { path: ['groupMargin'], suffixes: ['GROUP_MARGIN'], parse: parseNumber },
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
    if (!isPlainObject(layer)) {
      throw new InvalidOptionsError(`Invalid option options: received ${describeType(layer)}; allowed: an object.`, { option: 'options', allowed: 'an object' });
    }
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
