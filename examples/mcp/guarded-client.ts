/**
 * An MCP client that asks EdgeArmor before every tools/call it sends.
 *
 * The client lists the server's tools once, keeps every tools/call exchange, and before sending the next
 * call hands the guard the conversation, those exchanges, the tool list (whose descriptions are where
 * MCP tool poisoning hides) and the call (`mcpGuardInput`). A blocked call is never sent. The server here
 * is in memory and replays a conversation from the scenario generator; a real client would put its stdio
 * or HTTP transport behind the same `McpTransport` function.
 *
 *   npx tsx examples/mcp/guarded-client.ts [domain]     (default: banking)
 *
 * In your own code import from the package (`edgearmor/core`, `edgearmor/node`) instead of ../../src.
 */
import { pathToFileURL } from 'node:url';
import { mcpGuardInput, type Guard, type JsonValue, type Message, type Verdict } from '../../src/core/index.js';
import { createNodeGuard } from '../../src/node.js';
import { findCase, type GuardCase } from '../../src/scenarios/index.js';

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: number;
  method: string;
  params?: { name: string; arguments?: Record<string, JsonValue> };
}
export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}
/** How the client reaches a server: stdio, streamable HTTP, or in memory as below. */
export type McpTransport = (request: JsonRpcRequest) => Promise<JsonRpcResponse>;

/** One guarded call: the guard's verdict, and the server's response (null when the call was blocked and not sent). */
export interface GuardedCall {
  verdict: Verdict;
  response: JsonRpcResponse | null;
}

/** A client whose every tools/call goes through `guard` first; `messages` is the agent's conversation (system, user turns). */
export function createGuardedClient(transport: McpTransport, guard: Pick<Guard, 'check'>, messages: Message[]) {
  let nextId = 1;
  let toolsList: JsonRpcResponse | undefined;
  const exchanges: Array<{ request: JsonRpcRequest; response: JsonRpcResponse }> = [];
  return {
    exchanges,
    async callTool(name: string, args: Record<string, JsonValue>): Promise<GuardedCall> {
      toolsList ??= await transport({ jsonrpc: '2.0', id: nextId++, method: 'tools/list' });
      const request: JsonRpcRequest = { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } };
      const verdict = await guard.check(mcpGuardInput({ messages, exchanges, toolsList, call: request }));
      if (verdict.decision === 'block') return { verdict, response: null };
      const response = await transport(request);
      exchanges.push({ request, response });
      return { verdict, response };
    },
  };
}

/** An in-memory MCP server with a generated case's tools, answering each tool with the result the case recorded for it. */
export function scenarioServer(c: GuardCase): { transport: McpTransport; received: JsonRpcRequest[] } {
  const received: JsonRpcRequest[] = [];
  const results = new Map<string, string>();
  c.messages.forEach((m) => {
    if (m.role === 'tool' && m.tool_name) results.set(m.tool_name, m.content);
  });
  const tools = (c.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters }));
  const transport: McpTransport = async (request) => {
    received.push(request);
    if (request.method === 'tools/list') return { jsonrpc: '2.0', id: request.id, result: { tools } };
    if (request.method !== 'tools/call') return { jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `Method not found: ${request.method}` } };
    const text = results.get(request.params?.name ?? '') ?? 'Done.';
    return { jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text }], isError: false } };
  };
  return { transport, received };
}

/**
 * Replays a generated case through a guarded client: its calls in order, then its proposed action.
 * Stops at the first blocked call (an agent would not get that result). Returns every guarded call.
 */
export async function replay(c: GuardCase, guard: Pick<Guard, 'check'>): Promise<{ calls: Array<{ name: string } & GuardedCall>; received: JsonRpcRequest[] }> {
  const { transport, received } = scenarioServer(c);
  const conversation = c.messages.filter((m) => m.role === 'system' || m.role === 'user');
  const client = createGuardedClient(transport, guard, conversation);
  const planned = [...c.messages.flatMap((m) => m.tool_calls ?? []), c.action];
  const calls: Array<{ name: string } & GuardedCall> = [];
  for (const call of planned) {
    const done = await client.callTool(call.name, call.arguments as Record<string, JsonValue>);
    calls.push({ name: call.name, ...done });
    if (done.response === null) break;
  }
  return { calls, received };
}

async function main(): Promise<void> {
  const domain = process.argv[2] ?? 'banking';
  const guard = createNodeGuard();
  try {
    for (const pick of ['poisoning', 'benign'] as const) {
      const c = findCase(domain, pick, 1);
      if (!c) {
        console.log(`\n${domain} / ${pick}: the generator has no such case for seed 1`);
        continue;
      }
      console.log(`\n${domain} / ${pick}: ${c.messages.find((m) => m.role === 'user')?.content}`);
      const { calls } = await replay(c, guard);
      for (const { name, verdict, response } of calls) {
        const tp = verdict.toolPoisoning;
        const why = tp?.detected ? `tool poisoning in ${tp.sourceTool} (${tp.flow} flow)` : verdict.flagged.length > 0 ? 'injected tool result' : verdict.reason;
        console.log(`  tools/call ${name}: ${verdict.decision.toUpperCase()} (${why})${response === null ? ', not sent' : ''}`);
      }
    }
  } finally {
    await guard.dispose();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
