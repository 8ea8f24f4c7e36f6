/** Tool definitions as canonical JSON, their hashes, and a readable diff between two versions of one. */
import type { JsonObject, JsonValue } from '../types.js';
import { sha256Hex } from './sha256.js';
import type { ToolDefinition } from './types.js';

/** JSON with object keys sorted at every level and no whitespace: equal values give equal text, whatever order the server wrote. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.filter((k) => value[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(',')}}`;
}

/** The parts of a definition that are pinned: name, description, input schema and annotations (title and output schema are not read by the model's call). */
export function pinnedParts(tool: ToolDefinition): JsonObject {
  return { name: tool.name, description: tool.description, inputSchema: tool.inputSchema, ...(tool.annotations ? { annotations: tool.annotations } : {}) };
}

/** The SHA-256 of a definition's canonical JSON. */
export function definitionHash(tool: ToolDefinition): string {
  return sha256Hex(canonicalJson(pinnedParts(tool)));
}

/** Longest value a diff line shows of each side. */
const MAX_DIFF_VALUE_CHARS = 240;

function leaves(value: JsonValue, path: string, out: Map<string, string>): Map<string, string> {
  if (value !== null && typeof value === 'object' && (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0)) {
    if (Array.isArray(value)) value.forEach((x, i) => leaves(x, `${path}[${i}]`, out));
    else for (const [k, x] of Object.entries(value)) leaves(x, path === '' ? k : `${path}.${k}`, out);
  } else out.set(path, canonicalJson(value));
  return out;
}

const shown = (text: string | undefined) => (text === undefined ? '(absent)' : text.length > MAX_DIFF_VALUE_CHARS ? `${text.slice(0, MAX_DIFF_VALUE_CHARS)}...` : text);

/** One line per changed leaf of the definition, `path: before -> after`, `(absent)` for a side without it. */
export function definitionDiff(before: ToolDefinition, after: ToolDefinition): string[] {
  const a = leaves(pinnedParts(before), '', new Map());
  const b = leaves(pinnedParts(after), '', new Map());
  const paths = [...new Set([...a.keys(), ...b.keys()])];
  return paths.filter((p) => a.get(p) !== b.get(p)).map((p) => `${p}: ${shown(a.get(p))} -> ${shown(b.get(p))}`);
}
