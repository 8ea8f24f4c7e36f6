/** Tool lists in every supported shape (flat, OpenAI function tools, MCP) normalised into ToolSpecs, and the text and name checks they share. */
import { InvalidInputError } from './errors.js';
import { describeType, describeValue, isPlainObject, nameProblem, textProblem, toJsonValue } from './json.js';
import { MAX_NAME_CHARS } from './limits.js';
import type { JsonObject, ToolSpec } from './types.js';

/** `value` as text a guard input may carry, or an InvalidInputError naming `where`. */
export function requireString(value: unknown, where: string): string {
  if (typeof value !== 'string') {
    throw new InvalidInputError(`${where}: expected a string, received ${describeValue(value)}.`, { where, received: describeType(value) });
  }
  const problem = textProblem(value);
  if (problem !== null) throw new InvalidInputError(`${where}: ${problem}.`, { where });
  return value;
}

/** `value` as a tool or action name, or an InvalidInputError naming `where`. */
export function requireName(value: unknown, where: string): string {
  if (typeof value !== 'string') {
    throw new InvalidInputError(`${where}: expected a non-empty name, received ${describeValue(value)}.`, { where, received: describeType(value) });
  }
  const problem = nameProblem(value, MAX_NAME_CHARS);
  if (problem !== null) throw new InvalidInputError(`${where}: ${problem}.`, { where });
  return value;
}

function schemaOrEmpty(value: unknown, where: string): JsonObject {
  if (value === undefined || value === null) return { type: 'object', properties: {} };
  if (!isPlainObject(value)) {
    throw new InvalidInputError(`${where}: expected a JSON schema object, received ${describeType(value)}.`, { where });
  }
  return toJsonValue(value, where) as JsonObject;
}

/** Normalises one tool given flat `{name, description, parameters}`, OpenAI `{type:'function', function}` or MCP `{name, description, inputSchema}` into a ToolSpec. */
export function normalizeTool(tool: unknown, where = 'tool'): ToolSpec {
  if (!isPlainObject(tool)) {
    throw new InvalidInputError(`${where}: expected a tool object, received ${describeType(tool)}.`, { where });
  }
  if (tool['type'] === 'function' && isPlainObject(tool['function'])) {
    const fn = tool['function'];
    return {
      name: requireName(fn['name'], `${where}.function.name`),
      description: fn['description'] === undefined || fn['description'] === null ? '' : requireString(fn['description'], `${where}.function.description`),
      parameters: schemaOrEmpty(fn['parameters'], `${where}.function.parameters`),
    };
  }
  if ('parameters' in tool && 'inputSchema' in tool) {
    throw new InvalidInputError(`${where}: received both "parameters" and "inputSchema"; a tool has one schema (flat tools use "parameters", MCP tools "inputSchema").`, { where });
  }
  return {
    name: requireName(tool['name'], `${where}.name`),
    description: tool['description'] === undefined || tool['description'] === null ? '' : requireString(tool['description'], `${where}.description`),
    parameters: schemaOrEmpty('inputSchema' in tool ? tool['inputSchema'] : tool['parameters'], `${where}.${'inputSchema' in tool ? 'inputSchema' : 'parameters'}`),
  };
}

/** Normalises a list of tools of any supported shape; duplicate names are an error. */
export function normalizeTools(tools: unknown, where = 'tools'): ToolSpec[] {
  if (!Array.isArray(tools)) {
    throw new InvalidInputError(`${where}: expected an array of tools, received ${describeType(tools)}.`, { where });
  }
  const specs = tools.map((t, i) => normalizeTool(t, `${where}[${i}]`));
  const seen = new Set<string>();
  for (const spec of specs) {
    if (seen.has(spec.name)) throw new InvalidInputError(`${where}: tool name "${spec.name}" appears twice; tool names must be unique.`, { where, name: spec.name });
    seen.add(spec.name);
  }
  return specs;
}
