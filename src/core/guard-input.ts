/** The guard case (the dev.jsonl shape) parsed with the shared input schemas (input-schema.ts), then the checks across fields and the size limits. */
import * as v from 'valibot';
import { normalizeTools } from './tools.js';
import { InvalidInputError } from './errors.js';
import { describeValue, isPlainObject, toJsonValue } from './json.js';
import { boundedArray, expecting, Json, missingFrom, Name, parseInput, plainObject as plainObjectWith, Text } from './input-schema.js';
import { DEFINITION_FINDING_KINDS, type DefinitionFinding } from './mcp-definitions/types.js';
import { MAX_ACTION_ARGUMENTS_CHARS, MAX_FIELD_CHARS, MAX_MESSAGES, MAX_SPANS, MAX_TOOLS, MAX_TOTAL_CHARS } from './limits.js';
import type { GuardInput, JsonValue, Message, Role, ToolCall, ToolSpec } from './types.js';

const ROLES = ['system', 'user', 'assistant', 'tool'] as const satisfies readonly Role[];

/** Help text per field, used when a required field is missing. */
const FIELD_HELP: Readonly<Record<string, string>> = {
  messages: 'an array of messages',
  action: 'the proposed call {name, arguments, raw_text?}',
  role: 'one of "system", "user", "assistant", "tool"',
  content: 'a string (or null for no text)',
  name: 'a non-empty name',
  arguments: 'any JSON value (use {} for a call without arguments)',
};

const plainObject = <const E extends v.ObjectEntries>(entries: E, allowed: string) => plainObjectWith(entries, allowed, FIELD_HELP);

const HistoryToolCall = plainObject({ name: Name, arguments: Json }, 'a tool call {name, arguments}');

const MessageSchema = plainObject(
  {
    role: v.picklist(ROLES, expecting('one of "system", "user", "assistant", "tool"')),
    content: v.nullable(Text),
    tool_calls: v.nullish(boundedArray(HistoryToolCall, MAX_SPANS, 'an array of tool calls')),
    tool_name: v.nullish(Name),
  },
  'a message object {role, content, tool_calls?, tool_name?}',
);

const ActionSchema = plainObject(
  { name: Name, arguments: Json, raw_text: v.nullish(Text) },
  'the proposed call {name, arguments, raw_text?}',
);

/** A tool-definition finding: its kind, server, tool and text checked, every other field kept as JSON. */
const ToolFinding = v.pipe(
  v.unknown(),
  v.check(isPlainObject, expecting('a tool-definition finding {kind, server, tool, text}')),
  v.looseObject(
    { kind: v.picklist(DEFINITION_FINDING_KINDS, expecting(`one of ${DEFINITION_FINDING_KINDS.map((k) => `"${k}"`).join(', ')}`)), server: Text, tool: Name, text: Text },
    missingFrom({ kind: 'the finding\'s kind', server: 'the server\'s name', tool: 'the tool\'s name', text: 'what was found' }),
  ),
  v.transform((f) => toJsonValue(f, 'finding') as unknown as DefinitionFinding),
);

/** Most findings one input may carry: several per tool of a full client. */
const MAX_TOOL_FINDINGS = MAX_TOOLS * 8;

const ToolNames = boundedArray(Name, MAX_TOOLS, 'an array of tool names');

/** The schema of a guard case (dev.jsonl shape); extra fields are ignored, tool definitions are normalised afterwards. */
export const GuardCaseSchema = plainObject(
  {
    messages: boundedArray(MessageSchema, MAX_MESSAGES, 'an array of messages'),
    action: ActionSchema,
    untrusted_tools: v.nullish(ToolNames),
    trusted_tools: v.nullish(ToolNames),
    tools: v.nullish(boundedArray(v.unknown(), MAX_TOOLS, 'an array of tool definitions')),
    tool_findings: v.nullish(boundedArray(ToolFinding, MAX_TOOL_FINDINGS, 'an array of tool-definition findings')),
  },
  'a guard case object {messages, action}',
);

/** The statically inferred output of GuardCaseSchema, before the cross-field checks. */
export type ParsedGuardCase = v.InferOutput<typeof GuardCaseSchema>;

/** Throws unless the messages hold a user request; shared by parseGuardInput and buildContext so both say the same. */
export function requireUserRequest(messages: readonly Pick<Message, 'role'>[]): void {
  if (messages.some((m) => m.role === 'user')) return;
  throw new InvalidInputError(`input.messages: received ${messages.length} messages with no user message; attribution needs the user's request (at least one message with role "user").`, {
    where: 'input.messages',
    roles: messages.map((m) => m.role),
  });
}

/** Throws when more tool results than MAX_SPANS could become untrusted spans. */
export function requireSpanLimit(count: number, what = 'tool results'): void {
  if (count <= MAX_SPANS) return;
  throw new InvalidInputError(`input.messages: received ${count} ${what}; at most ${MAX_SPANS} are allowed (each is scored as its own variant).`, {
    where: 'input.messages',
    received: count,
    allowed: MAX_SPANS,
  });
}

function totalChars(value: JsonValue): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) return value.reduce<number>((n, x) => n + totalChars(x), 0);
  return Object.entries(value).reduce<number>((n, [k, x]) => n + k.length + totalChars(x), 0);
}

function toMessage(raw: ParsedGuardCase['messages'][number], i: number): Message {
  const where = `input.messages[${i}]`;
  const message: Message = { role: raw.role, content: raw.content ?? '' };
  if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
    if (raw.role !== 'assistant') {
      throw new InvalidInputError(`${where}.tool_calls: received tool calls on a "${raw.role}" message; only assistant messages carry tool calls.`, { where: `${where}.tool_calls` });
    }
    message.tool_calls = raw.tool_calls.map((c) => ({ name: c.name, arguments: c.arguments }));
  }
  if (raw.tool_name !== undefined && raw.tool_name !== null) {
    if (raw.role !== 'tool') {
      throw new InvalidInputError(`${where}.tool_name: received ${describeValue(raw.tool_name)} on a "${raw.role}" message; only tool messages carry a tool name.`, { where: `${where}.tool_name` });
    }
    message.tool_name = raw.tool_name;
  } else if (raw.role === 'tool') {
    // The trust lists match results by tool name, and AgentDojo always records it; an unnamed result is refused rather than guessed.
    throw new InvalidInputError(`${where}.tool_name: missing; expected the non-empty name of the tool that produced this result.`, { where: `${where}.tool_name` });
  }
  return message;
}

const MessagesSchema = boundedArray(MessageSchema, MAX_MESSAGES, 'an array of messages');

/**
 * Validates a whole conversation's messages (the guard's shape, as in a case's `messages`) without an
 * action: the traffic `edgearmor adapt` learns from. Same checks per message as a guard case.
 */
export function parseGuardMessages(value: unknown, where = 'messages'): Message[] {
  const messages = parseInput(MessagesSchema, value, where).map(toMessage);
  requireSpanLimit(messages.filter((m) => m.role === 'tool').length);
  return messages;
}

/** Validates an unknown value as a guard case (the dev.jsonl shape; extra fields are ignored) and returns a clean copy; every problem is an InvalidInputError naming the field. */
export function parseGuardInput(value: unknown): GuardInput {
  const parsed: ParsedGuardCase = parseInput(GuardCaseSchema, value, 'input');
  const messages = parsed.messages.map(toMessage);
  requireUserRequest(messages);
  requireSpanLimit(messages.filter((m) => m.role === 'tool').length);
  const action: ToolCall = { name: parsed.action.name, arguments: parsed.action.arguments };
  if (parsed.action.raw_text !== undefined && parsed.action.raw_text !== null) action.raw_text = parsed.action.raw_text;
  const argumentChars = JSON.stringify(action.arguments).length;
  if (argumentChars > MAX_ACTION_ARGUMENTS_CHARS) {
    throw new InvalidInputError(`input.action.arguments: received ${argumentChars} characters of JSON; at most ${MAX_ACTION_ARGUMENTS_CHARS} are allowed (the action is scored whole, never truncated).`, {
      where: 'input.action.arguments',
      received: argumentChars,
      allowed: MAX_ACTION_ARGUMENTS_CHARS,
    });
  }
  const input: GuardInput = { messages, action };
  if (parsed.untrusted_tools !== undefined && parsed.untrusted_tools !== null) input.untrusted_tools = [...parsed.untrusted_tools];
  if (parsed.trusted_tools !== undefined && parsed.trusted_tools !== null) input.trusted_tools = [...parsed.trusted_tools];
  if (parsed.tools !== undefined && parsed.tools !== null) input.tools = normalizeTools(parsed.tools, 'input.tools');
  if (parsed.tool_findings !== undefined && parsed.tool_findings !== null && parsed.tool_findings.length > 0) input.tool_findings = parsed.tool_findings;
  const total =
    messages.reduce((n, m) => n + m.content.length + (m.tool_name?.length ?? 0) + (m.tool_calls ?? []).reduce((k, c) => k + c.name.length + totalChars(c.arguments), 0), 0) +
    action.name.length +
    argumentChars +
    (action.raw_text?.length ?? 0) +
    (input.tools as ToolSpec[] | undefined ?? []).reduce((n, t) => n + t.name.length + t.description.length + totalChars(t.parameters), 0);
  if (total > MAX_TOTAL_CHARS) {
    throw new InvalidInputError(`input: received ${total} characters in all; at most ${MAX_TOTAL_CHARS} are allowed per case (and ${MAX_FIELD_CHARS} per field).`, {
      where: 'input',
      received: total,
      allowed: MAX_TOTAL_CHARS,
    });
  }
  return input;
}
