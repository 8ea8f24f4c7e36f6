/**
 * The CLI's case files (.json: one case or an array; .jsonl: one case a line), read and validated
 * whole before any model loads, with every problem located as `FILE:LINE: message`.
 */
import { readFileSync, statSync } from 'node:fs';
import { parseGuardInput } from '../core/adapters.js';
import { buildContext } from '../core/context.js';
import { InvalidInputError } from '../core/errors.js';
import type { ResolvedGuardOptions } from '../core/options.js';
import type { GuardInput } from '../core/types.js';

/** A case with its id for reporting. */
export interface NumberedCase {
  id: string;
  input: GuardInput;
}

/** One problem of a case file: the 1-based line it starts on (null: the file as a whole) and what is wrong. */
export interface CaseFileProblem {
  line: number | null;
  message: string;
}

/** Most problems listed for one file; a file with more is reported with a count of the rest. */
export const MAX_REPORTED_PROBLEMS = 50;

// Deeper than any case the guard accepts (MAX_JSON_DEPTH is 64), shallow enough for the scanner's recursion.
const MAX_SCAN_DEPTH = 512;

/** The problems of a case file, each as one `FILE:LINE: message` line (`FILE: message` for the file as a whole). */
export function problemLines(path: string, problems: readonly CaseFileProblem[]): string[] {
  const lines = problems.slice(0, MAX_REPORTED_PROBLEMS).map((p) => `${path}${p.line === null ? '' : `:${p.line}`}: ${oneLine(p.message)}`);
  if (problems.length > MAX_REPORTED_PROBLEMS) lines.push(`${path}: ${problems.length - MAX_REPORTED_PROBLEMS} more problems not listed`);
  return lines;
}

function oneLine(message: string): string {
  return message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Where a JSON text is malformed, and where each element of a top-level array starts (offsets). */
export function scanJson(text: string): { error: { offset: number; message: string } | null; itemOffsets: number[] | null } {
  let i = 0;
  const itemOffsets: number[] = [];
  class ScanError extends Error {
    constructor(message: string, readonly offset: number) {
      super(message);
    }
  }
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const expectChar = (c: string) => {
    if (text[i] !== c) throw new ScanError(i >= text.length ? `unexpected end of the file, expected "${c}"` : `expected "${c}", found ${JSON.stringify(text[i])}`, i);
    i++;
  };
  const string = () => {
    expectChar('"');
    for (;;) {
      if (i >= text.length) throw new ScanError('unterminated string', i);
      const c = text.charCodeAt(i);
      if (c === 34) {
        i++;
        return;
      }
      if (c < 32) throw new ScanError('control character in a string (escape it)', i);
      if (c === 92) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) throw new ScanError('bad \\u escape', i);
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else throw new ScanError('bad escape in a string', i);
      } else i++;
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  const value = (depth: number, top: boolean): void => {
    if (depth > MAX_SCAN_DEPTH) throw new ScanError(`nested deeper than ${MAX_SCAN_DEPTH} levels`, i);
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        string();
        ws();
        expectChar(':');
        value(depth + 1, false);
        ws();
        if (text[i] === ',') i++;
        else return expectChar('}');
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (top) itemOffsets.push(i);
        value(depth + 1, false);
        ws();
        if (text[i] === ',') i++;
        else return expectChar(']');
      }
    }
    if (c === '"') return string();
    for (const literal of ['true', 'false', 'null']) {
      if (text.startsWith(literal, i)) {
        i += literal.length;
        return;
      }
    }
    NUMBER.lastIndex = i;
    if (NUMBER.test(text)) {
      i = NUMBER.lastIndex;
      return;
    }
    throw new ScanError(c === undefined ? 'unexpected end of the file' : `unexpected ${JSON.stringify(c)}`, i);
  };
  try {
    if (text.charCodeAt(0) === 0xfeff) i = 1;
    ws();
    const isArray = text[i] === '[';
    value(0, true);
    ws();
    if (i < text.length) throw new ScanError(`unexpected ${JSON.stringify(text[i])} after the JSON value`, i);
    return { error: null, itemOffsets: isArray ? itemOffsets : null };
  } catch (e) {
    if (e instanceof ScanError) return { error: { offset: e.offset, message: e.message }, itemOffsets: null };
    throw e;
  }
}

/** Raw case values with the line each starts on, or the file's syntax problems. */
function rawCases(path: string, text: string): { raw: Array<{ value: unknown; line: number | null }>; problems: CaseFileProblem[] } {
  const raw: Array<{ value: unknown; line: number | null }> = [];
  const problems: CaseFileProblem[] = [];
  if (path.endsWith('.jsonl') || path.endsWith('.ndjson')) {
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        raw.push({ value: JSON.parse(line), line: i + 1 });
      } catch (e) {
        problems.push({ line: i + 1, message: `not valid JSON (${(e as Error).message})` });
      }
    });
    return { raw, problems };
  }
  const scan = scanJson(text);
  if (scan.error) {
    problems.push({ line: lineAt(text, scan.error.offset), message: `not valid JSON (${scan.error.message}); give a case, an array of cases, or a .jsonl file` });
    return { raw, problems };
  }
  const parsed = JSON.parse(text) as unknown;
  if (Array.isArray(parsed)) parsed.forEach((value, i) => raw.push({ value, line: lineAt(text, scan.itemOffsets![i]!) }));
  else raw.push({ value: parsed, line: lineAt(text, text.search(/\S/)) });
  return { raw, problems };
}

/**
 * Reads guard cases from a .json (one case or an array) or .jsonl file and validates every one of
 * them (with `options`, also what only the resolved options can refuse, such as a trust list naming
 * no tool result); throws one InvalidInputError whose `details.problems` lists every problem found.
 */
export function readCases(path: string, options?: ResolvedGuardOptions): NumberedCase[] {
  const refuse = (problems: CaseFileProblem[]): never => refuseCases(path, problems);
  let text: string;
  try {
    if (statSync(path).isDirectory()) refuse([{ line: null, message: 'is a directory; give a .json or .jsonl file of cases' }]);
    text = readFileSync(path, 'utf8');
    // Editors on Windows start UTF-8 files with a byte-order mark; it is not part of the JSON.
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  } catch (e) {
    if (e instanceof InvalidInputError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    return refuse([{ line: null, message: code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (e as Error).message})` }]);
  }
  const { raw, problems } = rawCases(path, text);
  if (problems.length === 0 && raw.length === 0) problems.push({ line: null, message: 'no cases found' });
  const cases: NumberedCase[] = [];
  raw.forEach(({ value, line }, i) => {
    try {
      const input = validatedInput(value, options);
      const id = (value as { id?: unknown }).id;
      cases.push({ id: typeof id === 'string' || typeof id === 'number' ? String(id) : String(i + 1), input });
    } catch (e) {
      problems.push({ line, message: (e as Error).message });
    }
  });
  if (problems.length > 0) refuse(problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0)));
  return cases;
}

/** One InvalidInputError for a file's problems: its message is the first, `details.problems` lists them all. */
export function refuseCases(path: string, problems: readonly CaseFileProblem[]): never {
  const [first] = problemLines(path, problems);
  throw new InvalidInputError(first!, { path, problems: problems.map((p) => ({ line: p.line, message: p.message })) });
}

/** A case's guard input, validated as the guard will (with `options`, also what only resolved options can refuse). */
export function validatedInput(value: unknown, options?: ResolvedGuardOptions): GuardInput {
  const input = parseGuardInput(value);
  if (options) buildContext(input, options);
  return input;
}
