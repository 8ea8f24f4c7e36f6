/**
 * Where options come from besides code: EDGEARMOR_* environment variables and CLI flags, both made from
 * the registry's external names (option-registry.ts) and read by one text parser, and layers (flags,
 * environment, config file) merged by precedence.
 */
import { InvalidOptionsError } from './errors.js';
import { describeType, isPlainObject } from './json.js';
import { GUARD_OPTIONS, type GuardOptions } from './option-registry.js';
import { formatOptionIssue, optionEntries, type OptionGroup, type OptionIssue, type OptionLeaf, type OptionTextKind } from './option-schema.js';

/** The spellings of a boolean option outside code, the same for environment variables and CLI flags. */
export const BOOLEAN_SPELLINGS = 'true/false, 1/0, yes/no, on/off';

/** A boolean option's text (case and surrounding space ignored), or undefined when it spells none. */
export function booleanFromText(raw: string): boolean | undefined {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return undefined;
}

/** An option that can be given as text: its path, its environment variables (aliases after the first) and its flag. */
export interface ExternalOption {
  path: readonly string[];
  leaf: OptionLeaf;
  text: OptionTextKind;
  /** EDGEARMOR_ names first, then the seeds' CAUSAL_ARMOR_ aliases. */
  envNames: readonly string[];
  /** The CLI flag without its dashes (kebab case of the first name). */
  flag: string;
}

/** Every option the environment and the CLI take, in the registry's order. */
export const EXTERNAL_OPTIONS: readonly ExternalOption[] = Object.freeze(
  optionEntries(GUARD_OPTIONS).flatMap(({ path, leaf }) => {
    const external = leaf.meta.external;
    if (external === undefined) return [];
    return [{ path, leaf, text: external.text, envNames: [...external.names.map((n) => `EDGEARMOR_${n}`), ...external.names.map((n) => `CAUSAL_ARMOR_${n}`)], flag: external.names[0].toLowerCase().replaceAll('_', '-') }];
  }),
);

/** The environment variable names optionsFromEnv reads, EDGEARMOR_ names first, then CAUSAL_ARMOR_ aliases. */
export const ENV_VARIABLES: readonly string[] = Object.freeze(EXTERNAL_OPTIONS.flatMap((o) => o.envNames));

const TEXT_ALLOWED: Readonly<Record<OptionTextKind, string>> = {
  number: 'a finite number',
  boolean: BOOLEAN_SPELLINGS,
  text: 'text',
  list: 'a comma-separated list of names',
  'count-or-none': 'an integer >= 1, or none',
};

/** How the usage text shows an option's value: its choices where it has them. */
export function textPlaceholder(option: ExternalOption): string {
  const choices = (option.leaf.schema as { options?: unknown }).options;
  if (Array.isArray(choices)) return choices.join('|');
  return { number: 'number', boolean: 'true|false', text: 'text', list: 'a,b', 'count-or-none': 'n|none' }[option.text];
}

/**
 * Reads an option's value from text, the same for an environment variable and a flag (`subject` names
 * which); the value is then validated with every other option by resolveOptions.
 */
export function optionFromText(option: ExternalOption, raw: string, subject: string): unknown {
  const trimmed = raw.trim();
  let value: unknown = raw;
  if (option.text === 'number' || (option.text === 'count-or-none' && !['', 'null', 'none'].includes(trimmed.toLowerCase()))) {
    value = trimmed === '' ? Number.NaN : Number(trimmed);
  } else if (option.text === 'count-or-none') {
    value = null;
  } else if (option.text === 'boolean') {
    value = booleanFromText(raw);
  } else if (option.text === 'list') {
    value = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  }
  if (value === undefined || (typeof value === 'number' && !Number.isFinite(value))) {
    const issue: OptionIssue = { code: 'invalid-value', path: option.path.join('.'), received: JSON.stringify(raw), allowed: TEXT_ALLOWED[option.text] };
    throw new InvalidOptionsError(formatOptionIssue(issue, subject), { option: issue.path, source: subject, allowed: issue.allowed, issues: [{ ...issue }] });
  }
  return value;
}

/** Sets `value` at `path`, making the groups on the way. */
export function setOptionAt(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    node[key] = isPlainObject(node[key]) ? node[key] : {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

/** Reads options from EDGEARMOR_* variables, accepting the seeds' CAUSAL_ARMOR_* names as aliases (an EDGEARMOR_ name wins); unset or empty variables are ignored. */
export function optionsFromEnv(env: Readonly<Record<string, string | undefined>>): GuardOptions {
  const out: Record<string, unknown> = {};
  for (const option of EXTERNAL_OPTIONS) {
    const variable = option.envNames.find((name) => env[name] !== undefined && env[name] !== '');
    if (variable !== undefined) setOptionAt(out, option.path, optionFromText(option, env[variable]!, `environment variable ${variable}`));
  }
  return out as GuardOptions;
}

/** Layers merged into one, group by group; undefined never overrides. */
function mergeGroup(node: OptionGroup, layers: readonly Record<string, unknown>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // Lowest precedence first, so later writes win.
  for (const layer of [...layers].reverse()) {
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      const child = (node.entries as Record<string, OptionGroup | OptionLeaf | undefined>)[key];
      if (child?.kind === 'group' && isPlainObject(value)) {
        const below = isPlainObject(out[key]) ? [out[key] as Record<string, unknown>] : [];
        out[key] = mergeGroup(child, [value, ...below]);
      } else {
        out[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
      }
    }
  }
  return out;
}

/** Merges option layers from highest to lowest precedence (e.g. flags, env, config file); groups merge key by key and undefined never overrides. */
export function mergeOptions(...layers: ReadonlyArray<GuardOptions | undefined>): GuardOptions {
  const given = layers.filter((l): l is GuardOptions => l !== undefined);
  for (const layer of given) {
    if (!isPlainObject(layer)) {
      throw new InvalidOptionsError(`Invalid option options: received ${describeType(layer)}; allowed: an object.`, { option: 'options', allowed: 'an object' });
    }
  }
  // The two trust lists are one policy: the highest layer that sets either decides both.
  const trustLayer = given.find((l) => l.untrustedTools !== undefined || l.trustedTools !== undefined);
  const merged = mergeGroup(GUARD_OPTIONS, given as Record<string, unknown>[]);
  if (trustLayer !== undefined) {
    delete merged['untrustedTools'];
    delete merged['trustedTools'];
    for (const key of ['untrustedTools', 'trustedTools'] as const) {
      const value: unknown = trustLayer[key];
      if (value !== undefined) merged[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
    }
  }
  return merged as GuardOptions;
}
