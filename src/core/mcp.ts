/**
 * MCP (Model Context Protocol) JSON-RPC messages as guard input: a server's `tools/list` result becomes
 * the registered tools (their descriptions are what tool poisoning hides in), a `tools/call` request the
 * proposed action, and earlier `tools/call` exchanges the tool turns of the conversation. Shapes follow
 * the MCP specification (2025-06-18): https://modelcontextprotocol.io/specification/2025-06-18/server/tools
 */
import { InvalidInputError } from './errors.js';
import { describeType, isPlainObject, toJsonValue } from './json.js';
import { normalizeTools, requireName, requireString } from './tools.js';
import type { GuardInput, JsonObject, Message, ToolCall, ToolSpec } from './types.js';

/** A JSON-RPC message's `result` (or the bare result when `value` is not an envelope); a JSON-RPC error is an InvalidInputError. */
function resultOf(value: unknown, where: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw new InvalidInputError(`${where}: expected a JSON-RPC response or its result object, received ${describeType(value)}.`, { where });
  if (isPlainObject(value['error'])) {
    const e = value['error'];
    throw new InvalidInputError(`${where}: the server answered with JSON-RPC error ${String(e['code'])}: ${String(e['message'])}; there is no result to read.`, { where });
  }
  if ('jsonrpc' in value) {
    if (!isPlainObject(value['result'])) throw new InvalidInputError(`${where}.result: expected an object, received ${describeType(value['result'])}.`, { where });
    return value['result'];
  }
  return value;
}

/**
 * The tools of a `tools/list` response (`{jsonrpc, id, result: {tools, nextCursor?}}`), of its bare result
 * (`{tools}`), or of every page when given an array of either (servers paginate with nextCursor). Each
 * tool's name, description and inputSchema are kept; title, annotations and outputSchema are not scored.
 */
export function fromMcpToolsList(response: unknown): ToolSpec[] {
  const pages = Array.isArray(response) ? response : [response];
  const tools = pages.flatMap((page, i) => {
    const where = Array.isArray(response) ? `toolsList[${i}]` : 'toolsList';
    const result = resultOf(page, where);
    if (!Array.isArray(result['tools'])) {
      throw new InvalidInputError(`${where}: expected a tools/list result with a "tools" array, received ${describeType(result['tools'])} for "tools".`, { where });
    }
    return result['tools'] as unknown[];
  });
  return normalizeTools(tools, 'toolsList.tools');
}

/** The proposed action of a `tools/call` request: `{jsonrpc: "2.0", id, method: "tools/call", params: {name, arguments?}}`. */
export function fromMcpToolsCall(request: unknown, where = 'call'): ToolCall {
  if (!isPlainObject(request) || request['method'] !== 'tools/call') {
    const method = isPlainObject(request) ? JSON.stringify(request['method']) : describeType(request);
    throw new InvalidInputError(`${where}: expected a JSON-RPC request with method "tools/call", received ${method}.`, { where });
  }
  const params = request['params'];
  if (!isPlainObject(params)) throw new InvalidInputError(`${where}.params: expected {name, arguments?}, received ${describeType(params)}.`, { where });
  const name = requireName(params['name'], `${where}.params.name`);
  const args = params['arguments'] ?? {};
  if (!isPlainObject(args)) throw new InvalidInputError(`${where}.params.arguments: expected an object, received ${describeType(args)}.`, { where });
  return { name, arguments: toJsonValue(args, `${where}.params.arguments`) as JsonObject };
}

/** The text an agent reads from one content block of a tool result; non-text media become a marker. */
function blockText(block: unknown, where: string): string {
  if (!isPlainObject(block)) throw new InvalidInputError(`${where}: expected a content block, received ${describeType(block)}.`, { where });
  switch (block['type']) {
    case 'text':
      return requireString(block['text'], `${where}.text`);
    case 'resource': {
      // An embedded resource's text is tool output like any other: untrusted, scored.
      const resource = isPlainObject(block['resource']) ? block['resource'] : {};
      return typeof resource['text'] === 'string' ? resource['text'] : `[resource ${String(resource['uri'] ?? '')}]`;
    }
    case 'resource_link':
      return `[resource link ${String(block['uri'] ?? '')}${typeof block['description'] === 'string' ? `: ${block['description']}` : ''}]`;
    case 'image':
    case 'audio':
      return `[${block['type']} ${String(block['mimeType'] ?? '')}]`;
    default:
      throw new InvalidInputError(`${where}.type: received ${JSON.stringify(block['type'])}; allowed are "text", "image", "audio", "resource_link", "resource".`, { where });
  }
}

/**
 * An earlier `tools/call` exchange as conversation turns: the assistant's call, then the tool message with
 * what the server returned (text blocks joined by newlines; structuredContent as JSON when there is no
 * content; a JSON-RPC error as its message). The response's id must be the request's.
 */
export function fromMcpToolResult(request: unknown, response: unknown, where = 'exchange'): Message[] {
  const call = fromMcpToolsCall(request, `${where}.request`);
  if (!isPlainObject(response)) throw new InvalidInputError(`${where}.response: expected a JSON-RPC response, received ${describeType(response)}.`, { where });
  const requestId = (request as Record<string, unknown>)['id'];
  if ('id' in response && response['id'] !== requestId) {
    throw new InvalidInputError(`${where}.response.id: ${JSON.stringify(response['id'])} does not answer the request's id ${JSON.stringify(requestId)}.`, { where });
  }
  let content: string;
  if (isPlainObject(response['error'])) {
    content = `Error ${String(response['error']['code'])}: ${String(response['error']['message'])}`;
  } else {
    const result = resultOf(response, `${where}.response`);
    const blocks = result['content'];
    if (Array.isArray(blocks) && blocks.length > 0) content = blocks.map((b, i) => blockText(b, `${where}.response.result.content[${i}]`)).join('\n');
    else if (result['structuredContent'] !== undefined) content = JSON.stringify(toJsonValue(result['structuredContent'], `${where}.response.result.structuredContent`));
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
}

/**
 * The guard input for an MCP client about to send `call`: the server's tools (descriptions included, for
 * tool-poisoning checks), the conversation with its earlier tool exchanges, and the call as the action.
 * A call to a tool the server did not list is refused: a guard cannot judge a tool it has not seen.
 */
export function mcpGuardInput(parts: McpGuardInputParts): GuardInput {
  const tools = fromMcpToolsList(parts.toolsList);
  const action = fromMcpToolsCall(parts.call);
  if (!tools.some((t) => t.name === action.name)) {
    throw new InvalidInputError(`call.params.name: "${action.name}" is not among the server's tools (${tools.map((t) => `"${t.name}"`).join(', ') || 'none'}).`, { where: 'call' });
  }
  const exchanges = (parts.exchanges ?? []).flatMap((x, i) => fromMcpToolResult(x.request, x.response, `exchanges[${i}]`));
  return {
    messages: [...(parts.messages ?? []), ...exchanges],
    action,
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
  };
}
