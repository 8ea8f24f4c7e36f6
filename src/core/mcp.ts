/**
 * MCP (Model Context Protocol) JSON-RPC messages as guard input: a server's `tools/list` result becomes
 * the registered tools (their descriptions are what tool poisoning hides in), a `tools/call` request the
 * proposed action, and earlier `tools/call` exchanges the tool turns of the conversation. Shapes follow
 * the MCP specification (2025-06-18): https://modelcontextprotocol.io/specification/2025-06-18/server/tools
 */
import * as v from 'valibot';
import { describeValue, isPlainObject } from './json.js';
import { arrayOf, discriminated, expecting, inputError, Json, jsonObject, missingFrom, Name, parseInput, plainObject, Text } from './input-schema.js';
import { normalizeTools } from './tools.js';
import { hiddenFinding, reviewServers } from './mcp-definitions/checks.js';
import { findHiddenText, sanitizeHiddenText } from './mcp-definitions/hidden-text.js';
import type { DefinitionFinding, ToolDefinition } from './mcp-definitions/types.js';
import type { GuardInput, JsonObject, Message, ToolCall, ToolSpec } from './types.js';

/** A JSON-RPC error object, when `value` is a response carrying one. */
const rpcError = (value: unknown): Record<string, unknown> | null => (isPlainObject(value) && isPlainObject(value['error']) ? value['error'] : null);

/** A JSON-RPC response's `result` checked by `result`, or the bare result when there is no envelope; a JSON-RPC error is refused. */
function jsonRpcResult<T>(result: v.GenericSchema<unknown, T>, what: string): v.GenericSchema<unknown, T> {
  const envelope = v.pipe(
    v.object({ result: v.pipe(v.unknown(), v.check(isPlainObject, expecting(what)), result) }, missingFrom({ result: what })),
    v.transform((e) => e.result),
  );
  return v.pipe(
    v.unknown(),
    v.check(isPlainObject, expecting(`a JSON-RPC response or its result object (${what})`)),
    v.check(
      (value) => rpcError(value) === null,
      (issue) => {
        const e = rpcError(issue.input) ?? {};
        return `received JSON-RPC error ${String(e['code'])}: ${String(e['message'])}; expected a result (an error response has none to read)`;
      },
    ),
    v.lazy((value: unknown) => ('jsonrpc' in (value as object) ? envelope : result)) as v.GenericSchema<unknown, T>,
  );
}

const ToolsListPage = jsonRpcResult(plainObject({ tools: arrayOf(v.unknown(), 'an array of tools') }, 'a tools/list result {tools}', { tools: 'a "tools" array' }), 'a tools/list result {tools}');

/**
 * The tools of a `tools/list` response (`{jsonrpc, id, result: {tools, nextCursor?}}`), of its bare result
 * (`{tools}`), or of every page when given an array of either (servers paginate with nextCursor). Each
 * tool's name, description and inputSchema are kept; title, annotations and outputSchema are not scored.
 */
export function fromMcpToolsList(response: unknown): ToolSpec[] {
  const pages = Array.isArray(response) ? response : [response];
  const tools = pages.flatMap((page, i) => parseInput(ToolsListPage, page, Array.isArray(response) ? `toolsList[${i}]` : 'toolsList').tools);
  return normalizeTools(tools, 'toolsList.tools');
}

/**
 * One server's tool definitions as pinned and checked (name, description, input schema, annotations), from a
 * `tools/list` response, its result `{tools}`, pages of either, or a bare array of tools; a tool may give its
 * schema as `inputSchema` (MCP) or `parameters` (flat and OpenAI shapes).
 */
export function fromMcpToolDefinitions(value: unknown, where = 'toolsList'): ToolDefinition[] {
  const bare = Array.isArray(value) && !value.some((x) => isPlainObject(x) && ('jsonrpc' in x || ('tools' in x && !('name' in x))));
  const raw = bare ? (value as unknown[]) : (Array.isArray(value) ? value : [value]).flatMap((page, i) => parseInput(ToolsListPage, page, Array.isArray(value) ? `${where}[${i}]` : where).tools);
  const place = bare ? where : `${where}.tools`;
  const specs = normalizeTools(raw, place);
  return specs.map((spec, i) => {
    const tool = raw[i] as Record<string, unknown>;
    const fn = isPlainObject(tool['function']) ? tool['function'] : tool;
    const annotations = fn['annotations'];
    if (annotations !== undefined && annotations !== null && !isPlainObject(annotations)) {
      throw inputError(`${place}[${i}].annotations`, `received ${describeValue(annotations)}; expected an object of hints`, { received: describeValue(annotations) });
    }
    const definition: ToolDefinition = { name: spec.name, description: spec.description, inputSchema: spec.parameters };
    if (isPlainObject(annotations)) definition.annotations = parseInput(Json, annotations, `${place}[${i}].annotations`) as JsonObject;
    return definition;
  });
}

const ToolsCall = v.pipe(
  v.unknown(),
  v.check(isPlainObject, expecting('a JSON-RPC request {jsonrpc, id, method: "tools/call", params}')),
  v.object(
    {
      method: v.literal('tools/call', expecting('"tools/call"')),
      params: plainObject({ name: Name, arguments: v.nullish(jsonObject('an object of arguments'), () => ({})) }, 'the params {name, arguments?}', { name: 'a non-empty name' }),
    },
    missingFrom({ method: '"tools/call"', params: 'the params {name, arguments?}' }),
  ),
);

/** The proposed action of a `tools/call` request: `{jsonrpc: "2.0", id, method: "tools/call", params: {name, arguments?}}`. */
export function fromMcpToolsCall(request: unknown, where = 'call'): ToolCall {
  const { params } = parseInput(ToolsCall, request, where);
  return { name: params.name, arguments: params.arguments };
}

/** The text an agent reads from one content block of a tool result; non-text media become a marker. */
const McpBlock = discriminated(
  'type',
  {
    text: v.pipe(plainObject({ text: Text }, 'a text block {type: "text", text}', { text: 'a string' }), v.transform((b) => b.text)),
    // An embedded resource's text is tool output like any other: untrusted, scored.
    resource: v.pipe(
      v.unknown(),
      v.transform((b) => {
        const block = b as Record<string, unknown>;
        const resource = isPlainObject(block['resource']) ? block['resource'] : {};
        return typeof resource['text'] === 'string' ? resource['text'] : `[resource ${String(resource['uri'] ?? '')}]`;
      }),
    ),
    resource_link: v.pipe(
      v.unknown(),
      v.transform((b) => {
        const block = b as Record<string, unknown>;
        return `[resource link ${String(block['uri'] ?? '')}${typeof block['description'] === 'string' ? `: ${block['description']}` : ''}]`;
      }),
    ),
    image: v.pipe(v.unknown(), v.transform((b) => `[image ${String((b as Record<string, unknown>)['mimeType'] ?? '')}]`)),
    audio: v.pipe(v.unknown(), v.transform((b) => `[audio ${String((b as Record<string, unknown>)['mimeType'] ?? '')}]`)),
  },
  'a content block',
  '"text", "image", "audio", "resource_link" or "resource"',
);

const McpBlocks = arrayOf(McpBlock, 'an array of content blocks');
const NotRead = v.pipe(v.unknown(), v.transform((): string[] => []));

// Content that is not an array is not read (structuredContent is, as before); an empty list is valid.
const CallResult = jsonRpcResult(
  v.object({
    content: v.optional(v.lazy((content: unknown) => (Array.isArray(content) ? McpBlocks : NotRead)) as v.GenericSchema<unknown, string[]>),
    structuredContent: v.optional(v.unknown()),
  }),
  'a tools/call result {content, structuredContent?}',
);

/**
 * An earlier `tools/call` exchange as conversation turns: the assistant's call, then the tool message with
 * what the server returned (text blocks joined by newlines; structuredContent as JSON when there is no
 * content; a JSON-RPC error as its message). The response's id must be the request's.
 */
export function fromMcpToolResult(request: unknown, response: unknown, where = 'exchange'): Message[] {
  const call = fromMcpToolsCall(request, `${where}.request`);
  if (!isPlainObject(response)) throw inputError(`${where}.response`, `received ${describeValue(response)}; expected a JSON-RPC response`, { received: describeValue(response) });
  const requestId = (request as Record<string, unknown>)['id'];
  if ('id' in response && response['id'] !== requestId) {
    throw inputError(`${where}.response.id`, `received ${describeValue(response['id'])}; expected the request's id, ${describeValue(requestId)}`, { received: describeValue(response['id']) });
  }
  let content: string;
  const error = rpcError(response);
  if (error !== null) {
    content = `Error ${String(error['code'])}: ${String(error['message'])}`;
  } else {
    const result = parseInput(CallResult, response, `${where}.response`);
    const place = 'jsonrpc' in response ? `${where}.response.result` : `${where}.response`;
    if (result.content !== undefined && result.content.length > 0) content = result.content.join('\n');
    else if (result.structuredContent !== undefined) content = JSON.stringify(parseInput(Json, result.structuredContent, `${place}.structuredContent`));
    else content = '';
  }
  return [
    { role: 'assistant', content: '', tool_calls: [{ name: call.name, arguments: call.arguments }] },
    { role: 'tool', tool_name: call.name, content },
  ];
}

/** What {@link mcpGuardInput} reads. */
export interface McpGuardInputParts {
  /** The conversation so far, in the guard's message shape (system, user, assistant turns). @defaultValue [] */
  messages?: Message[];
  /** Earlier tools/call exchanges, appended to `messages` in order as assistant call + tool result. @defaultValue [] */
  exchanges?: ReadonlyArray<{ request: unknown; response: unknown }>;
  /** The server's tools/list response (or its pages). */
  toolsList: unknown;
  /** The tools/call request the agent is about to send. */
  call: unknown;
  /** The server's identity as the client configured it, named in findings. @defaultValue "server" */
  server?: string;
  /**
   * Tool-definition findings for this client (its pins' `review` and `reviewServers` over all its servers). When
   * absent, this server's tools are reviewed alone (hidden text, schema anomalies). Findings about tool results are
   * added either way.
   */
  findings?: readonly DefinitionFinding[];
}

/**
 * The guard input for an MCP client about to send `call`: the server's tools (descriptions included, for
 * tool-poisoning checks), the conversation with its earlier tool exchanges, and the call as the action.
 * A call to a tool the server did not list is refused: a guard cannot judge a tool it has not seen.
 */
export function mcpGuardInput(parts: McpGuardInputParts): GuardInput {
  const server = parts.server ?? 'server';
  const tools = fromMcpToolsList(parts.toolsList);
  const action = fromMcpToolsCall(parts.call);
  if (!tools.some((t) => t.name === action.name)) {
    throw inputError('call.params.name', `received ${describeValue(action.name)}; expected one of the server's tools (${tools.map((t) => `"${t.name}"`).join(', ') || 'none'})`, {
      received: describeValue(action.name),
    });
  }
  const exchanges = (parts.exchanges ?? []).flatMap((x, i) => fromMcpToolResult(x.request, x.response, `exchanges[${i}]`));
  const definitions = parts.findings ?? reviewServers([{ server, tools: fromMcpToolDefinitions(parts.toolsList) }]);
  const results = exchanges.flatMap((m) => {
    const found = m.role === 'tool' ? findHiddenText(m.content) : null;
    return found === null ? [] : [hiddenFinding(server, m.tool_name!, 'result', found)];
  });
  const findings = [...definitions, ...results];
  // Hidden characters are removed, and tag characters spelled out, before scoring: the model then reads what the
  // text says in plain letters, and the findings keep the original.
  const input: GuardInput = {
    messages: [...(parts.messages ?? []), ...exchanges.map((m) => ({ ...m, content: sanitizeHiddenText(m.content) }))],
    action,
    tools: tools.map((t) => ({ name: t.name, description: sanitizeHiddenText(t.description), inputSchema: t.parameters })),
  };
  if (findings.length > 0) input.tool_findings = findings;
  return input;
}
