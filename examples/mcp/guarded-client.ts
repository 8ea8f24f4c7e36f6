/**
 * An MCP client that asks EdgeArmor before every tools/call it sends.
 *
 * The client lists the server's tools once, keeps every tools/call exchange, and before sending the next
 * call hands the guard the conversation, those exchanges, the tool list (whose descriptions are where
 * MCP tool poisoning hides) and the call (`mcpGuardInput`). A blocked call is never sent. With tool pins,
 * the listing is checked against the definitions approved before (a changed tool is a rug pull), and
 * against the client's other servers (collisions, shadowing); those findings reach the guard with the
 * call, and its `toolDefinitions` options say whether they block it or are reported. The server here
 * is in memory and replays a conversation from the scenario generator; a real client would put its stdio
 * or HTTP transport behind the same `McpTransport` function.
 *
 *   npx tsx examples/mcp/guarded-client.ts [domain]     (default: banking)
 *
 * In your own code import from the package (`edgearmor/core`, `edgearmor/node`) instead of ../../src.
 */
import { pathToFileURL } from 'node:url';
import {
  fromMcpToolDefinitions,
  mcpGuardInput,
  reviewServers,
  type DefinitionFinding,
  type Guard,
  type JsonValue,
  type Message,
  type ServerTools,
  type ToolPins,
  type Verdict,
} from '../../src/core/index.js';
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

/** How a client checks the tool definitions it is given. */
export interface GuardedClientOptions {
  /** This server's identity in the client's configuration (what pins and findings name). @defaultValue "server" */
  server?: string;
  /** Pins of approved definitions (createNodeToolPins in Node, createBrowserToolPins in a page): a server seen first is pinned, a later change is a finding. */
  pins?: ToolPins;
  /** The tools of the client's other servers, for the checks across servers (name collisions, shadowing). */
  otherServers?: ServerTools[];
}

/** A client whose every tools/call goes through `guard` first; `messages` is the agent's conversation (system, user turns). */
export function createGuardedClient(transport: McpTransport, guard: Pick<Guard, 'check'>, messages: Message[], options: GuardedClientOptions = {}) {
  const server = options.server ?? 'server';
  let nextId = 1;
  let listed: { toolsList: JsonRpcResponse; findings: DefinitionFinding[] } | undefined;
  const exchanges: Array<{ request: JsonRpcRequest; response: JsonRpcResponse }> = [];
  /** Lists the server's tools and checks their definitions: against the pins, and beside the other servers. */
  async function listTools() {
    const toolsList = await transport({ jsonrpc: '2.0', id: nextId++, method: 'tools/list' });
    const servers = [{ server, tools: fromMcpToolDefinitions(toolsList) }, ...(options.otherServers ?? [])];
    const pinned = (await options.pins?.review(servers.slice(0, 1))) ?? [];
    return { toolsList, findings: [...pinned, ...reviewServers(servers)] };
  }
  return {
    exchanges,
    /** The definition findings of the current listing (empty before the first call). */
    findings: () => listed?.findings ?? [],
    async callTool(name: string, args: Record<string, JsonValue>): Promise<GuardedCall> {
      listed ??= await listTools();
      const { toolsList, findings } = listed;
      const request: JsonRpcRequest = { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } };
      const verdict = await guard.check(mcpGuardInput({ messages, exchanges, toolsList, call: request, server, findings }));
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
