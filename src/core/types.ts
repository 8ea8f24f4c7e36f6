import type { DefinitionFinding } from './mcp-definitions/finding.js';

/** A JSON primitive value. */
export type JsonPrimitive = string | number | boolean | null;

/** Any JSON value: tool-call arguments may be null, lists, nested objects or scalars. */
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** The role of a conversation message. */
export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A tool call recorded inside an assistant message of the history. */
export interface MessageToolCall {
  name: string;
  arguments: JsonValue;
}

/** One conversation message in the OpenAI-like shape the guard works on. */
export interface Message {
  role: Role;
  content: string;
  tool_calls?: MessageToolCall[];
  tool_name?: string;
}

/** The tool call proposed by the agent, the thing the guard decides on. */
export interface ToolCall {
  name: string;
  arguments: JsonValue;
  raw_text?: string;
}

/** A tool the agent was given, normalised from any of the supported tool shapes. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** A flat tool definition: `{name, description, parameters}`. */
export interface FlatToolInput {
  name: string;
  description?: string;
  parameters?: JsonObject;
}

/** An OpenAI function tool: `{type: 'function', function: {name, description, parameters}}`. */
export interface OpenAIFunctionToolInput {
  type: 'function';
  function: { name: string; description?: string; parameters?: JsonObject };
}

/** An MCP tool: `{name, description, inputSchema}`. */
export interface McpToolInput {
  name: string;
  description?: string;
  inputSchema?: JsonObject;
}

/** Any tool shape accepted in a guard input. */
export type ToolInput = FlatToolInput | OpenAIFunctionToolInput | McpToolInput;

/** A guard case: the context before the action, the proposed action and optional tool trust lists (extra fields are ignored). */
export interface GuardInput {
  messages: Message[];
  action: ToolCall;
  untrusted_tools?: string[];
  trusted_tools?: string[];
  tools?: ToolInput[];
  /**
   * Tool-definition findings about these tools (pins, collisions, shadowing, hidden text, schema anomalies;
   * `mcpGuardInput` fills it): evidence in the verdict, deciding the call where the `toolDefinitions` options say.
   */
  tool_findings?: DefinitionFinding[];
}
