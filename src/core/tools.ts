/** Tool lists in every supported shape (flat, OpenAI function tools, MCP) normalised into ToolSpecs, and the text and name checks they share. */
import * as v from 'valibot';
import { describeValue, isPlainObject } from './json.js';
import { arrayOf, expecting, inputError, JsonSchemaObject, missingFrom, Name, parseInput, plainObject, Text } from './input-schema.js';
import type { JsonObject, ToolSpec } from './types.js';

/** `value` as text a guard input may carry, or an InvalidInputError naming `where`. */
export function requireString(value: unknown, where: string): string {
  return parseInput(Text, value, where);
}

/** `value` as a tool or action name, or an InvalidInputError naming `where`. */
export function requireName(value: unknown, where: string): string {
  return parseInput(Name, value, where);
}

const TOOL_HELP = { name: 'a non-empty name', function: 'the function {name, description?, parameters?}' };

const emptySchema = (): JsonObject => ({ type: 'object', properties: {} });

/** OpenAI's `{type: "function", function: {name, description?, parameters?}}`. */
const OpenAITool = v.pipe(
  plainObject(
    {
      function: plainObject(
        { name: Name, description: v.nullish(Text), parameters: v.nullish(JsonSchemaObject) },
        'the function {name, description?, parameters?}',
        TOOL_HELP,
      ),
    },
    'a tool object',
    TOOL_HELP,
  ),
  v.transform(({ function: fn }): ToolSpec => ({ name: fn.name, description: fn.description ?? '', parameters: fn.parameters ?? emptySchema() })),
);

/** Flat `{name, description?, parameters?}` and MCP `{name, description?, inputSchema?}`; a tool with both schemas is ambiguous. */
const FlatOrMcpTool = v.pipe(
  v.custom<Record<string, unknown>>(isPlainObject, expecting('a tool object {name, description?, parameters?} or {name, description?, inputSchema?}')),
  v.check(
    (tool) => !('parameters' in tool && 'inputSchema' in tool),
    'received both "parameters" and "inputSchema"; expected one schema (flat tools use "parameters", MCP tools "inputSchema")',
  ),
  v.object({ name: Name, description: v.nullish(Text), parameters: v.nullish(JsonSchemaObject), inputSchema: v.nullish(JsonSchemaObject) }, missingFrom(TOOL_HELP)),
  v.transform((tool): ToolSpec => ({ name: tool.name, description: tool.description ?? '', parameters: tool.inputSchema ?? tool.parameters ?? emptySchema() })),
);

/** Any supported tool shape: `type: "function"` with a `function` object selects OpenAI's, anything else is flat or MCP. */
const ToolSchema = v.lazy((tool: unknown) => (isPlainObject(tool) && tool['type'] === 'function' && isPlainObject(tool['function']) ? OpenAITool : FlatOrMcpTool));

const ToolList = arrayOf(ToolSchema, 'an array of tools');

/** Normalises one tool given flat `{name, description, parameters}`, OpenAI `{type:'function', function}` or MCP `{name, description, inputSchema}` into a ToolSpec. */
export function normalizeTool(tool: unknown, where = 'tool'): ToolSpec {
  return parseInput(ToolSchema, tool, where);
}

/** Normalises a list of tools of any supported shape; duplicate names are an error. */
export function normalizeTools(tools: unknown, where = 'tools'): ToolSpec[] {
  const specs = parseInput(ToolList, tools, where);
  const firstIndex = new Map<string, number>();
  specs.forEach((spec, i) => {
    const first = firstIndex.get(spec.name);
    if (first !== undefined) {
      // The trust lists and leave-one-out address tools by name, so two tools with one name cannot both be judged.
      throw inputError(`${where}[${i}].name`, `received ${describeValue(spec.name)}, the name of ${where}[${first}] too; expected unique tool names`, { received: describeValue(spec.name), name: spec.name });
    }
    firstIndex.set(spec.name, i);
  });
  return specs;
}
