import { InvalidInputError } from './errors.js';
import { MAX_FIELD_CHARS, MAX_JSON_DEPTH, MAX_TOTAL_CHARS } from './limits.js';
import type { JsonObject, JsonValue } from './types.js';

/** Whether a value is a plain object: an object literal or `Object.create(null)`, not an array, Date, Map or class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Describes a value's type for error messages. */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Describes a received value for error messages: its type and, for scalars, a short preview. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing or undefined)';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const preview = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
    return value.length > 40 ? `the string ${preview} (${value.length} characters)` : `the string ${preview}`;
  }
  if (typeof value === 'number') return `the number ${String(value)}`;
  if (typeof value === 'boolean') return `the boolean ${String(value)}`;
  if (typeof value === 'bigint') return `the BigInt ${String(value)}n`;
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? "" : "s"}`;
  if (isPlainObject(value)) return 'an object';
  const ctor = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof ctor === 'string' && ctor !== '' ? `an instance of ${ctor}` : 'a non-plain object';
}

/** Index of the first lone (unpaired) UTF-16 surrogate in a string, or -1 when the string is well-formed. */
export function firstLoneSurrogate(text: string): number {
  // The engine's own check (ES2024) scans a field of a million characters in about a millisecond, where the loop
  // below takes tens: a host that has it finds well-formed text, the common case, without the loop.
  if ((text as { isWellFormed?: () => boolean }).isWellFormed?.() === true) return -1;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) {
        i += 1;
        continue;
      }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** Why a text field is unacceptable (lone surrogate, over MAX_FIELD_CHARS), or null; NUL and other control characters are valid text. */
export function textProblem(text: string, maxChars: number = MAX_FIELD_CHARS): string | null {
  if (text.length > maxChars) return `received ${text.length} characters; at most ${maxChars} are allowed`;
  const bad = firstLoneSurrogate(text);
  if (bad >= 0) {
    // A lone surrogate has no UTF-8 encoding: the tokenizer would replace it with U+FFFD, so the proxy would score different text.
    return `received a lone UTF-16 surrogate (U+${text.charCodeAt(bad).toString(16).toUpperCase()}) at index ${bad}; allowed is well-formed UTF-16 text`;
  }
  return null;
}

/** Why a name (tool name, action name) is unacceptable (empty, NUL or control characters, too long, lone surrogate), or null. */
export function nameProblem(name: string, maxChars: number): string | null {
  if (name.length === 0) return 'received ""; allowed is a non-empty name';
  const control = /[\u0000-\u001f\u007f]/.exec(name);
  if (control !== null) {
    return `received a control character (U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}) at index ${control.index}; names may not contain NUL or other control characters`;
  }
  return textProblem(name, maxChars);
}

function keyPath(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

function invalid(where: string, rel: string, reason: string): InvalidInputError {
  return new InvalidInputError(`${where}${rel}: ${reason}.`, { where: `${where}${rel}`, relativePath: rel, reason });
}

function walk(value: unknown, where: string, rel: string, depth: number, seen: Set<object>): JsonValue {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const problem = textProblem(value);
    if (problem !== null) throw invalid(where, rel, problem);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(where, rel, `received the number ${value}; allowed are finite numbers (JSON has no NaN or Infinity)`);
    return value;
  }
  if (typeof value === 'object') {
    if (depth >= MAX_JSON_DEPTH) throw invalid(where, rel, `received a value nested deeper than ${MAX_JSON_DEPTH} levels; at most ${MAX_JSON_DEPTH} are allowed`);
    if (seen.has(value)) throw invalid(where, rel, 'received a cyclic reference; JSON values cannot contain cycles');
    seen.add(value);
    try {
      if (Array.isArray(value)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < value.length; i += 1) {
          const item = value[i] as unknown;
          if (item === undefined) throw invalid(where, `${rel}[${i}]`, 'received undefined (or an array hole); allowed are JSON values (null, boolean, number, string, array, object)');
          out.push(walk(item, where, `${rel}[${i}]`, depth + 1, seen));
        }
        return out;
      }
      if (!isPlainObject(value)) {
        throw invalid(where, rel, `received ${describeValue(value)}; allowed are JSON values (null, boolean, number, string, array, plain object)`);
      }
      const out: JsonObject = {};
      for (const key of Object.keys(value)) {
        const keyProblem = textProblem(key);
        if (keyProblem !== null) throw invalid(where, `${rel}${keyPath(key.slice(0, 40))}`, `key: ${keyProblem}`);
        const member = value[key];
        // JSON.stringify would silently drop an undefined member; the guard scores exactly what it was given, so it refuses instead.
        if (member === undefined) throw invalid(where, `${rel}${keyPath(key)}`, 'received undefined; allowed are JSON values (use null, or leave the key out)');
        // defineProperty keeps "__proto__" an own data key instead of changing the prototype.
        Object.defineProperty(out, key, { value: walk(member, where, `${rel}${keyPath(key)}`, depth + 1, seen), enumerable: true, writable: true, configurable: true });
      }
      return out;
    } finally {
      seen.delete(value);
    }
  }
  throw invalid(where, rel, `received ${describeValue(value)}; allowed are JSON values (null, boolean, number, string, array, object)`);
}

/** Checks that a value is JSON (finite numbers, plain objects, well-formed strings, no undefined, functions, cycles or excess depth) and returns a clean copy. */
export function toJsonValue(value: unknown, where: string): JsonValue {
  try {
    return walk(value, where, '', 0, new Set());
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    // Getters and proxies can throw anything while being read; that is bad input, not a guard bug.
    throw new InvalidInputError(`${where}: the value could not be read as JSON (${error instanceof Error ? error.message : String(error)}).`, { where }, { cause: error });
  }
}

// The input copy follows a JSON field's own depth limit below the deepest place that holds one (messages[i].tool_calls[j].arguments).
const MAX_INPUT_DEPTH = MAX_JSON_DEPTH + 8;

/**
 * Reads a caller's value once into plain data: arrays and plain objects (transparent Proxies of them too) are
 * copied, strings, numbers, booleans, null and undefined kept. A value that cannot be read (a getter that throws, a
 * revoked Proxy) or is not plain data (a function, symbol, BigInt, class instance or cycle, even in a field the
 * guard ignores) is an InvalidInputError whose `where` names the field. Every guard input goes through it first:
 * the in-process guard parses this copy, and the worker guard sends it across, so both accept and refuse the
 * same values with the same error.
 */
export function readPlainData(value: unknown, where: string): unknown {
  const budget = { left: MAX_TOTAL_CHARS };
  const tooMany = () => invalid(where, '', `received more than ${MAX_TOTAL_CHARS} values; at most ${MAX_TOTAL_CHARS} are allowed`);
  const unreadable = (rel: string, error: unknown) =>
    new InvalidInputError(`${where}${rel}: the value could not be read (${error instanceof Error ? error.message : String(error)}).`, { where: `${where}${rel}` }, { cause: error });
  const copy = (item: unknown, rel: string, depth: number, seen: Set<object>): unknown => {
    if ((budget.left -= 1) < 0) throw tooMany();
    if (item === null || item === undefined || typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean') return item;
    if (typeof item !== 'object') throw invalid(where, rel, `received ${describeValue(item)}; allowed are JSON values (null, boolean, number, string, array, object)`);
    if (depth >= MAX_INPUT_DEPTH) throw invalid(where, rel, `received a value nested deeper than ${MAX_INPUT_DEPTH} levels; at most ${MAX_INPUT_DEPTH} are allowed`);
    if (seen.has(item)) throw invalid(where, rel, 'received a cyclic reference; JSON values cannot contain cycles');
    // keys is null for an array; a Proxy's traps run here, once, and a revoked one throws.
    let keys: string[] | null;
    let other: string | null = null;
    try {
      if (Array.isArray(item)) keys = null;
      else if (isPlainObject(item)) keys = Object.keys(item);
      else {
        keys = [];
        other = describeValue(item);
      }
    } catch (error) {
      throw unreadable(rel, error);
    }
    if (other !== null) throw invalid(where, rel, `received ${other}; allowed are JSON values (null, boolean, number, string, array, plain object)`);
    seen.add(item);
    try {
      if (keys === null) {
        const array = item as unknown[];
        let length: number;
        try {
          length = array.length;
        } catch (error) {
          throw unreadable(rel, error);
        }
        if (length > budget.left) throw tooMany();
        const out: unknown[] = [];
        for (let i = 0; i < length; i += 1) out.push(copy(read(array, i, `${rel}[${i}]`), `${rel}[${i}]`, depth + 1, seen));
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const key of keys) {
        const member = copy(read(item as Record<string, unknown>, key, `${rel}${keyPath(key)}`), `${rel}${keyPath(key)}`, depth + 1, seen);
        // defineProperty keeps "__proto__" an own data key instead of changing the prototype.
        Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true });
      }
      return out;
    } finally {
      seen.delete(item);
    }
  };
  const read = (from: object, key: string | number, rel: string): unknown => {
    try {
      return (from as Record<string | number, unknown>)[key];
    } catch (error) {
      throw unreadable(rel, error);
    }
  };
  return copy(value, '', 0, new Set());
}

/** The one formatter of a validation issue's path: `root.key[0].other`, or `key.other` without a root (option names). */
export function formatIssuePath(path: ReadonlyArray<{ key: unknown }> | undefined, root = ''): string {
  let out = root;
  for (const item of path ?? []) {
    if (typeof item.key === 'number') out += `[${item.key}]`;
    else if (typeof item.key === 'string') out += /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(item.key) ? `${out === '' ? '' : '.'}${item.key}` : `[${JSON.stringify(item.key)}]`;
  }
  return out;
}
