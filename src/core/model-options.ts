/**
 * A model directory's own detection operating point: `guard-options.json`, pinned in manifest.json like
 * every other model file, written by `edgearmor adapt` after it recalibrates a fine-tuned model and by
 * `edgearmor calibrate` after it places a model's operating point on the user's traffic. Only the
 * options that place the operating point on the model's delta scale may be set there; an option the caller
 * sets (code, config file, environment, flag) wins over the file, and the file wins over the defaults.
 */
import { InvalidOptionsError, ModelLoadError } from './errors.js';
import { describeValue, isPlainObject } from './json.js';
import { mergeOptions, setOptionAt } from './option-sources.js';
import type { GuardOptions } from './option-registry.js';
import { resolveOptions, type ResolvedGuardOptions } from './options.js';

/** The options file's name inside a model directory. */
export const MODEL_OPTIONS_FILE = 'guard-options.json';

/** The options file's schema version; a reader refuses any other. */
export const MODEL_OPTIONS_SCHEMA = 1;

/**
 * The options a model directory may set, as dotted paths: the margins, weight and MindGuard AIR thresholds
 * that are calibrated on the model's own deltas and attention, and the thresholds of its own log-probabilities that say it does not
 * know an agent (familiarityThreshold) or did not expect a call's tool (unlikelyToolThreshold). Everything else (trust lists, failure policy, defense, limits) is the caller's
 * policy and cannot travel with a model.
 */
export const MODEL_OPTION_PATHS = Object.freeze([
  'tau',
  'userWeight',
  'groupMargin',
  'toolPoisoning.leaveOneOutMargin',
  'toolPoisoning.mindguard.airThreshold',
  'toolPoisoning.beforeToolResults.airThreshold',
  'toolPoisoning.beforeToolResults.leaveOneOutMargin',
  'familiarityThreshold',
  'unlikelyToolThreshold',
] as const);

/** One of {@link MODEL_OPTION_PATHS}. */
export type ModelOptionPath = (typeof MODEL_OPTION_PATHS)[number];

/** The guard options a model directory may carry. */
export interface ModelOptions {
  tau?: number;
  userWeight?: number;
  groupMargin?: number;
  toolPoisoning?: { leaveOneOutMargin?: number; mindguard?: { airThreshold?: number }; beforeToolResults?: { airThreshold?: number; leaveOneOutMargin?: number } };
  /** Null where adaptation changed the model: the embedded model's value no longer applies. */
  familiarityThreshold?: number | null;
  /** Set where a calibration found the model's own log-probabilities rank the agent's injected calls (a model that knows the agent). */
  unlikelyToolThreshold?: number | null;
}

/** A parsed, validated `guard-options.json`. */
export interface ModelOptionsFile {
  schema: typeof MODEL_OPTIONS_SCHEMA;
  options: ModelOptions;
  /** What wrote the file (e.g. 'edgearmor adapt'). */
  source?: string;
  /** When it was written (ISO 8601). */
  created?: string;
  /** What the point was chosen on, where a calibration chose it. */
  calibration?: ModelCalibration;
}

/** What a model's operating point was chosen on: the target, the checks (planted into the user's traffic) and what the point reached there. */
export interface ModelCalibration {
  /** Most benign checks blocked, as a fraction. */
  targetFpr: number;
  /** Injected and benign checks, and the agent's real calls among the benign. */
  injected: number;
  benign: number;
  realCalls: number;
  /** Injected checks blocked and benign checks blocked at the point. */
  tpr: number;
  fpr: number;
  rocAuc: number | null;
}

/** What a model's options file did to a guard's options, as `GuardStatus.modelOptions` reports it. */
export interface ModelOptionsStatus {
  /** The file, relative to the model directory. */
  file: string;
  /** The file's `source`, or null. */
  source: string | null;
  /** The file's `created`, where it has one. */
  created?: string;
  /** What the point was chosen on, where the file says. */
  calibration?: ModelCalibration;
  /** The file's values the guard uses, by dotted path. */
  applied: Partial<Record<ModelOptionPath, number | null>>;
  /** The paths the file sets that the caller set too: the caller's values are used. */
  overridden: ModelOptionPath[];
}

const FILE_KEYS = ['schema', 'options', 'source', 'created', 'calibration'] as const;
const CALIBRATION_KEYS = ['targetFpr', 'injected', 'benign', 'realCalls', 'tpr', 'fpr', 'rocAuc'] as const;
const ALLOWED = MODEL_OPTION_PATHS.join(', ');

function refuse(message: string, details: Record<string, string | string[]>): never {
  throw new ModelLoadError(`model file "${MODEL_OPTIONS_FILE}": ${message}`, { file: MODEL_OPTIONS_FILE, ...details });
}

/** The dotted paths of an object's leaves (a value that is not a plain object). */
function leafPaths(o: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(o).flatMap(([key, inner]) => (isPlainObject(inner) ? leafPaths(inner, `${prefix}${key}.`) : [`${prefix}${key}`]));
}

function parseCalibration(value: unknown): ModelCalibration {
  if (!isPlainObject(value)) refuse(`calibration is ${describeValue(value)}; allowed: an object {${CALIBRATION_KEYS.join(', ')}}`, { option: 'calibration' });
  for (const key of Object.keys(value)) {
    if (!(CALIBRATION_KEYS as readonly string[]).includes(key)) refuse(`unknown key "calibration.${key}"; allowed: ${CALIBRATION_KEYS.join(', ')}`, { option: `calibration.${key}` });
  }
  for (const key of CALIBRATION_KEYS) {
    const v = value[key];
    const ok = key === 'rocAuc' && v === null ? true : typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (!ok) refuse(`calibration.${key} is ${describeValue(v)}; allowed: a finite number >= 0${key === 'rocAuc' ? ' or null' : ''}`, { option: `calibration.${key}` });
  }
  return value as unknown as ModelCalibration;
}

function valueAt(options: object, path: ModelOptionPath): unknown {
  return path.split('.').reduce<unknown>((o, key) => (isPlainObject(o) ? o[key] : undefined), options);
}

/** Validates the parsed JSON of a model's options file; throws ModelLoadError naming the file, the key and what is allowed. */
export function parseModelOptionsFile(value: unknown): ModelOptionsFile {
  if (!isPlainObject(value)) refuse(`received ${describeValue(value)}; allowed: an object {schema, options, source?, created?, calibration?}`, {});
  for (const key of Object.keys(value)) {
    if (!(FILE_KEYS as readonly string[]).includes(key)) refuse(`unknown key "${key}"; allowed: ${FILE_KEYS.join(', ')}`, { option: key, allowed: [...FILE_KEYS] });
  }
  if (value['schema'] !== MODEL_OPTIONS_SCHEMA) refuse(`schema is ${describeValue(value['schema'])}; this version reads schema ${MODEL_OPTIONS_SCHEMA}`, { option: 'schema' });
  for (const key of ['source', 'created'] as const) {
    if (value[key] !== undefined && typeof value[key] !== 'string') refuse(`${key} is ${describeValue(value[key])}; allowed: a string`, { option: key });
  }
  const options = value['options'];
  if (!isPlainObject(options)) refuse(`options is ${describeValue(options)}; allowed: an object with some of ${ALLOWED}`, { option: 'options' });
  for (const path of leafPaths(options)) {
    if (!(MODEL_OPTION_PATHS as readonly string[]).includes(path)) {
      refuse(`option "${path}" cannot be set by a model directory; allowed: ${ALLOWED} (the detection operating point)`, { option: path, allowed: [...MODEL_OPTION_PATHS] });
    }
  }
  try {
    // The guard's own schema judges the values, so a model file accepts exactly what a caller may pass.
    resolveOptions(options as GuardOptions);
  } catch (e) {
    if (!(e instanceof InvalidOptionsError)) throw e;
    refuse(e.message, { option: String(e.details['option'] ?? 'options') });
  }
  return {
    schema: MODEL_OPTIONS_SCHEMA,
    options: options as ModelOptions,
    ...(value['source'] !== undefined ? { source: value['source'] as string } : {}),
    ...(value['created'] !== undefined ? { created: value['created'] as string } : {}),
    ...(value['calibration'] !== undefined ? { calibration: parseCalibration(value['calibration']) } : {}),
  };
}

/** The text of a `guard-options.json` for these options, validated as a reader will (for `edgearmor adapt`). */
export function modelOptionsFileText(options: ModelOptions, meta: { source: string; created?: string; calibration?: ModelCalibration }): string {
  const file = parseModelOptionsFile({
    schema: MODEL_OPTIONS_SCHEMA,
    options,
    source: meta.source,
    created: meta.created ?? new Date().toISOString(),
    ...(meta.calibration ? { calibration: meta.calibration } : {}),
  });
  return `${JSON.stringify(file, null, 2)}\n`;
}

/** The options a guard judges with: the caller's over the values of its model's file that applied (as {@link applyModelOptions} layers them), over the defaults. */
export function judgedOptions(caller: GuardOptions, model: ModelOptionsStatus | null): ResolvedGuardOptions {
  const fromFile: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(model?.applied ?? {})) setOptionAt(fromFile, path.split('.'), value);
  return resolveOptions(mergeOptions(caller, fromFile as GuardOptions));
}

/**
 * Layers a model's options file under the caller's options (the caller's unresolved options: what they set
 * explicitly, from any source) and reports which of the file's values apply and which the caller overrode.
 */
export function applyModelOptions(caller: GuardOptions, file: ModelOptionsFile): { options: GuardOptions; status: ModelOptionsStatus } {
  const applied: Partial<Record<ModelOptionPath, number | null>> = {};
  const overridden: ModelOptionPath[] = [];
  for (const path of MODEL_OPTION_PATHS) {
    const value = valueAt(file.options, path);
    if (value === undefined) continue;
    if (valueAt(caller, path) !== undefined) overridden.push(path);
    else applied[path] = value as number | null;
  }
  return {
    options: mergeOptions(caller, file.options as GuardOptions),
    status: {
      file: MODEL_OPTIONS_FILE,
      source: file.source ?? null,
      ...(file.created !== undefined ? { created: file.created } : {}),
      ...(file.calibration !== undefined ? { calibration: file.calibration } : {}),
      applied,
      overridden,
    },
  };
}
