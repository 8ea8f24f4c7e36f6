/**
 * The traffic `edgearmor adapt` learns from: one whole agent conversation a line, in the guard's message
 * shape or in the shapes agents log (OpenAI chat completions, Anthropic Messages, MCP transcripts),
 * validated whole before anything runs, every problem located as `FILE:LINE: what is wrong`.
 */
import { readFileSync, statSync } from 'node:fs';
import { fromAnthropicMessages, fromOpenAIMessages, normalizeTools } from '../core/adapters.js';
import { InvalidInputError } from '../core/errors.js';
import { parseGuardMessages } from '../core/guard-input.js';
import { describeValue } from '../core/json.js';
import { fromMcpToolResult, fromMcpToolsList } from '../core/mcp.js';
import type { GuardInput, Message, ToolSpec } from '../core/types.js';
import { problemLines, type CaseFileProblem } from '../cli/case-file.js';

/** The conversation shapes a traffic line may have. */
export const TRAFFIC_FORMATS = ['guard', 'openai', 'anthropic', 'mcp'] as const;
export type TrafficFormat = (typeof TRAFFIC_FORMATS)[number];

/** One conversation of the traffic, in the guard's shape. */
export interface Conversation {
  /** The line's `id` when it has one, else `line-N`. */
  id: string;
  /** 1-based line in the traffic file. */
  line: number;
  format: TrafficFormat;
  messages: Message[];
  tools: ToolSpec[];
}

/** A tool call of a conversation, as the guard would have checked it before it ran. */
export interface CallSite {
  conversation: Conversation;
  /** Index of the assistant message that made the call, and of the call within it. */
  messageIndex: number;
  callIndex: number;
  input: GuardInput;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The shape of one line, from the fields only that shape has. */
export function detectFormat(line: Record<string, unknown>): TrafficFormat {
  if ('toolsList' in line || 'exchanges' in line) return 'mcp';
  const messages = Array.isArray(line['messages']) ? (line['messages'] as unknown[]) : [];
  const tools = Array.isArray(line['tools']) ? (line['tools'] as unknown[]) : [];
  const openai = messages.some(
    (m) => isObject(m) && ('tool_call_id' in m || (Array.isArray(m['tool_calls']) && (m['tool_calls'] as unknown[]).some((c) => isObject(c) && 'function' in c))),
  );
  if (openai || tools.some((t) => isObject(t) && t['type'] === 'function')) return 'openai';
  const blocks = messages.some(
    (m) => isObject(m) && Array.isArray(m['content']) && (m['content'] as unknown[]).some((b) => isObject(b) && (b['type'] === 'tool_use' || b['type'] === 'tool_result')),
  );
  if (blocks || typeof line['system'] === 'string' || tools.some((t) => isObject(t) && 'input_schema' in t)) return 'anthropic';
  return 'guard';
}

function toolsOf(value: unknown, format: TrafficFormat): ToolSpec[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new InvalidInputError(`tools: received ${describeValue(value)}; expected an array of tool definitions.`, { where: 'tools' });
  // Anthropic names the schema input_schema; the guard reads it as an MCP tool's inputSchema.
  const shaped = format === 'anthropic' ? value.map((t) => (isObject(t) && 'input_schema' in t ? { name: t['name'], description: t['description'], inputSchema: t['input_schema'] } : t)) : value;
  return normalizeTools(shaped, 'tools');
}

/** An MCP transcript: `{messages?, toolsList, exchanges: [{request, response} | message, ...]}`, in order. */
function mcpConversation(line: Record<string, unknown>): { messages: Message[]; tools: ToolSpec[] } {
  const tools = fromMcpToolsList(line['toolsList']);
  const messages = line['messages'] === undefined ? [] : parseGuardMessages(line['messages']);
  const exchanges = line['exchanges'];
  if (!Array.isArray(exchanges)) throw new InvalidInputError(`exchanges: received ${describeValue(exchanges)}; expected an array of {request, response} tools/call exchanges (or messages between them).`, { where: 'exchanges' });
  exchanges.forEach((x, i) => {
    if (isObject(x) && 'request' in x) messages.push(...fromMcpToolResult(x['request'], x['response'], `exchanges[${i}]`));
    else messages.push(...parseGuardMessages([x], `exchanges[${i}]`));
  });
  return { messages, tools };
}

/** Parses one traffic line (already JSON) as a conversation of the given or detected format. */
export function parseConversation(value: unknown, line: number, format?: TrafficFormat): Conversation {
  if (!isObject(value)) throw new InvalidInputError(`received ${describeValue(value)}; expected a conversation object {messages, tools?}.`, { where: 'line' });
  const shape = format ?? detectFormat(value);
  let messages: Message[];
  let tools: ToolSpec[];
  if (shape === 'mcp') ({ messages, tools } = mcpConversation(value));
  else {
    if (!('messages' in value)) throw new InvalidInputError('messages: missing; expected the conversation\'s messages (an array).', { where: 'messages' });
    messages =
      shape === 'openai' ? fromOpenAIMessages(value['messages']) : shape === 'anthropic' ? fromAnthropicMessages(value['messages'], value['system']) : parseGuardMessages(value['messages']);
    tools = toolsOf(value['tools'], shape);
  }
  const id = value['id'];
  return { id: typeof id === 'string' || typeof id === 'number' ? String(id) : `line-${line}`, line, format: shape, messages, tools };
}

/**
 * Every tool call of a conversation as the guard input it would have been checked as: the messages
 * before the assistant turn that made it, the call, the conversation's tools. Calls before any user
 * message are left out (the guard needs the user's request).
 */
export function callSites(conversation: Conversation): CallSite[] {
  const out: CallSite[] = [];
  const { messages } = conversation;
  messages.forEach((m, i) => {
    if (m.role !== 'assistant' || !m.tool_calls) return;
    const before = messages.slice(0, i);
    if (!before.some((x) => x.role === 'user')) return;
    m.tool_calls.forEach((call, j) => {
      const input: GuardInput = { messages: before, action: { name: call.name, arguments: call.arguments } };
      if (conversation.tools.length > 0) input.tools = conversation.tools;
      out.push({ conversation, messageIndex: i, callIndex: j, input });
    });
  });
  return out;
}

/** Reads and validates a traffic file (.jsonl); throws one InvalidInputError listing every problem (`details.problems`). */
export function readTraffic(path: string, format?: TrafficFormat): Conversation[] {
  const refuse = (problems: CaseFileProblem[]): never => {
    const lines = problemLines(path, problems);
    throw new InvalidInputError(lines.join('\n'), { path, problems: problems.map((p) => ({ line: p.line, message: p.message })) });
  };
  let text: string;
  try {
    if (statSync(path).isDirectory()) refuse([{ line: null, message: 'is a directory; give a .jsonl file with one conversation a line' }]);
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof InvalidInputError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    return refuse([{ line: null, message: code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? (e as Error).message})` }]);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const problems: CaseFileProblem[] = [];
  const conversations: Conversation[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      problems.push({ line: i + 1, message: `not valid JSON (${(e as Error).message}); expected one conversation object a line` });
      return;
    }
    try {
      conversations.push(parseConversation(value, i + 1, format));
    } catch (e) {
      problems.push({ line: i + 1, message: (e as Error).message });
    }
  });
  if (problems.length === 0 && conversations.length === 0) problems.push({ line: null, message: 'no conversations found' });
  if (problems.length > 0) refuse(problems);
  return conversations;
}
