/**
 * The valibot building blocks every input parser shares (guard case, tool lists, message adapters) and the
 * one way their issues become InvalidInputError: `where: received ...; expected ...`, where being the path
 * from formatIssuePath. No valibot type leaks out of the core through the parsers' signatures.
 */
import * as v from 'valibot';
import { EdgeArmorError, InvalidInputError } from './errors.js';
import { describeValue, formatIssuePath, isPlainObject, nameProblem, readPlainData, textProblem, toJsonValue } from './json.js';
import { MAX_NAME_CHARS } from './limits.js';
import type { JsonObject, JsonValue } from './types.js';

// valibot was chosen over zod/mini for bundle size (a guard-case schema bundles to ~2 KB gzip against ~6 KB) with the same
// static type inference.

/** Separates a path below the issue's own path (from toJsonValue) from the reason, inside an issue message. */
const SUB_PATH = '\u0000';

/** An issue message `received <the input>; expected <allowed>`. */
export const expecting =
  (allowed: string) =>
  (issue: v.BaseIssue<unknown>): string =>
    `received ${describeValue(issue.input)}; expected ${allowed}`;

/** The message of a missing required key: `missing; expected <help for that key>`. */
export const missingFrom =
  (help: Readonly<Record<string, string>>) =>
  (issue: v.BaseIssue<unknown>): string => {
    const key = issue.path?.[issue.path.length - 1]?.key;
    return `missing; expected ${typeof key === 'string' && Object.hasOwn(help, key) ? help[key] : 'a value'}`;
  };

/** A check whose failure reason comes from one of the shared problem functions (textProblem, nameProblem). */
export function checked<T>(problem: (value: T) => string | null): v.RawCheckAction<T> {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const reason = problem(dataset.value);
    if (reason !== null) addIssue({ message: reason });
  });
}

/** Text a guard input may carry (at most MAX_FIELD_CHARS, well-formed UTF-16). */
export const Text = v.pipe(v.string(expecting('a string')), checked<string>((s) => textProblem(s)));

/** A tool or action name (non-empty, no control characters, at most MAX_NAME_CHARS). */
export const Name = v.pipe(v.string(expecting('a non-empty name')), checked<string>((s) => nameProblem(s, MAX_NAME_CHARS)));

/** Turns a JSON-ish value into a checked copy inside a schema; toJsonValue's problems keep their path below the field. */
function jsonTransform<T>(read: (value: unknown) => unknown) {
  return v.rawTransform<T, JsonValue>(({ dataset, addIssue, NEVER }) => {
    try {
      return toJsonValue(read(dataset.value), '');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      const rel = typeof error.details['relativePath'] === 'string' ? error.details['relativePath'] : '';
      const reason = typeof error.details['reason'] === 'string' ? error.details['reason'] : error.message.replace(/^: /, '').replace(/\.$/, '');
      addIssue({ message: `${rel}${SUB_PATH}${reason}` });
      return NEVER;
    }
  });
}

/** Any JSON value, checked and copied by toJsonValue. */
export const Json = v.pipe(v.unknown(), jsonTransform<unknown>((x) => x));

/** Any JSON value, where null or a missing value means `{}` (a call without arguments). */
export const JsonOrEmpty = v.optional(v.pipe(v.unknown(), jsonTransform<unknown>((x) => x ?? {})), () => ({}));

/**
 * OpenAI's `arguments`: a JSON string (an empty one means no arguments) or, as some clients send, the value
 * itself; null or missing means `{}`.
 */
export const JsonStringOrValue = v.optional(
  v.pipe(
    v.unknown(),
    v.rawTransform<unknown, unknown>(({ dataset, addIssue, NEVER }) => {
      const value = dataset.value;
      if (typeof value !== 'string') return value ?? {};
      if (value.trim() === '') return {};
      try {
        return JSON.parse(value) as unknown;
      } catch (error) {
        addIssue({ message: `received ${describeValue(value)}, which does not parse (${error instanceof Error ? error.message : String(error)}); expected a JSON string` });
        return NEVER;
      }
    }),
    jsonTransform<unknown>((x) => x),
  ),
  () => ({}),
);

/** A plain object of JSON values, copied by toJsonValue; `allowed` says what it is for. */
export function jsonObject(allowed: string) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, expecting(allowed)), jsonTransform<Record<string, unknown>>((x) => x), v.transform((x) => x as JsonObject));
}

/** A JSON Schema object. */
export const JsonSchemaObject = jsonObject('a JSON schema object');

/** A plain object validated by `entries`; arrays, Dates, Maps and class instances are refused before their keys are read. `help` says what a missing key expects. */
export function plainObject<const E extends v.ObjectEntries>(entries: E, allowed: string, help: Readonly<Record<string, string>> = {}) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, expecting(allowed)), v.object(entries, missingFrom(help)));
}

/** An array of at most `max` items, the length checked before any item is read. */
export function boundedArray<const S extends v.GenericSchema>(item: S, max: number, allowed: string) {
  return v.pipe(
    v.custom<unknown[]>(Array.isArray, expecting(allowed)),
    v.check((a: unknown[]) => a.length <= max, (issue: v.CheckIssue<unknown[]>) => `received ${issue.input.length} items; at most ${max} are allowed`),
    v.array(item, expecting(allowed)),
  );
}

/** An array of any length. */
export function arrayOf<const S extends v.GenericSchema>(item: S, allowed: string) {
  return v.pipe(v.custom<unknown[]>(Array.isArray, expecting(allowed)), v.array(item, expecting(allowed)));
}

/** The input error every parser throws: `where: reason.` with `where` (and whatever else helps) as details. */
export function inputError(where: string, reason: string, details: JsonObject = {}): InvalidInputError {
  return new InvalidInputError(`${where}: ${reason}.`, { where, ...details });
}

function issueToError(issue: v.BaseIssue<unknown>, root: string): InvalidInputError {
  let where = formatIssuePath(issue.path, root);
  let reason = issue.message;
  const sep = reason.indexOf(SUB_PATH);
  if (sep >= 0) {
    where += reason.slice(0, sep);
    reason = reason.slice(sep + 1);
  }
  return inputError(where, reason, { received: describeValue(issue.input) });
}

/**
 * Parses `value` with `schema`, the first problem thrown as an InvalidInputError whose path starts at `root`. The
 * value is read once into plain data first (readPlainData), so a getter or Proxy that throws names its field.
 */
export function parseInput<const S extends v.GenericSchema>(schema: S, value: unknown, root: string): v.InferOutput<S> {
  const data = readPlainData(value, root);
  try {
    const result = v.safeParse(schema, data, { abortEarly: true });
    if (!result.success) throw issueToError(result.issues[0], root);
    return result.output;
  } catch (error) {
    if (error instanceof EdgeArmorError) throw error;
    // The schemas read plain data only; anything else thrown here is still bad input, not a guard bug.
    throw new InvalidInputError(`${root}: the value could not be read (${error instanceof Error ? error.message : String(error)}).`, { where: root }, { cause: error });
  }
}

/**
 * A plain object whose `key` field (`type`, `role`) picks its schema from `options`; an unknown value fails
 * on that field, listing `allowed`. Own keys only, so "constructor" or "__proto__" select nothing.
 */
export function discriminated<const O extends Record<string, v.GenericSchema>>(key: string, options: O, what: string, allowed: string) {
  const unknownValue = v.object({ [key]: v.picklist(Object.keys(options), expecting(allowed)) }, missingFrom({ [key]: allowed }));
  const pick = v.lazy((input: unknown) => {
    const value = (input as Record<string, unknown>)[key];
    return typeof value === 'string' && Object.hasOwn(options, value) ? (options[value] as v.GenericSchema) : unknownValue;
  }) as v.GenericSchema<unknown, v.InferOutput<O[keyof O]>>;
  return v.pipe(v.unknown(), v.check(isPlainObject, expecting(what)), pick);
}
