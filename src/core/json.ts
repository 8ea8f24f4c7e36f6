import { InvalidInputError } from './errors.js';
import type { JsonObject, JsonValue } from './types.js';

/** Whether a value is a plain (non-array, non-null) object. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Checks that a value is JSON (finite numbers, no undefined, functions or cycles) and returns it typed. */
export function toJsonValue(value: unknown, where: string, seen: Set<object> = new Set()): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidInputError(`${where}: received the number ${value}; only finite numbers are JSON.`, { where });
    return value;
  }
  if (typeof value === 'object') {
    if (seen.has(value)) throw new InvalidInputError(`${where}: received a cyclic object; JSON values cannot contain cycles.`, { where });
    seen.add(value);
    try {
      if (Array.isArray(value)) return value.map((v, i) => toJsonValue(v, `${where}[${i}]`, seen));
      const out: JsonObject = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        // JSON.stringify drops undefined members, so accept and drop them too.
        if (v === undefined) continue;
        out[k] = toJsonValue(v, `${where}.${k}`, seen);
      }
      return out;
    } finally {
      seen.delete(value);
    }
  }
  throw new InvalidInputError(`${where}: received a value of type ${typeof value}; allowed are JSON values (null, boolean, number, string, array, object).`, { where });
}

/** Describes a value's type for error messages. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
