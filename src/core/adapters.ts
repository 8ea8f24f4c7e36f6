/** OpenAI chat-completions and Anthropic Messages API shapes converted into guard messages and actions, parsed with the guard input's schemas and messages. */
import * as v from 'valibot';
import { describeValue } from './json.js';
import { arrayOf, discriminated, inputError, JsonOrEmpty, JsonStringOrValue, Name, parseInput, plainObject, Text } from './input-schema.js';
import type { Message, MessageToolCall, ToolCall } from './types.js';

const HELP: Readonly<Record<string, string>> = {
  name: 'a non-empty name',
  function: 'the function {name, arguments}',
  text: 'a string',
  refusal: 'a string',
  id: 'a string id',
  tool_call_id: 'the id of an earlier assistant tool call',
  tool_use_id: 'the id of an earlier tool_use block',
  content: 'a string or an array of content blocks',
};

// Built once: v.lazy getters below return these instead of building a schema per value.
const AnyString = v.string();
const NullAsEmpty = v.pipe(v.null(), v.transform(() => ''));

/** Parts are joined with newlines, matching how AgentDojo normalised block lists. */
const joined = (parts: readonly string[]): string => parts.join('\n');

/** A string kept as it is (the guard input checks it again), null or missing as "", or an array of `part`s joined. */
function textContent(part: v.GenericSchema<unknown, string>, allowed: string) {
  const parts = v.pipe(arrayOf(part, allowed), v.transform((texts: string[]) => joined(texts)));
  return v.optional(v.lazy((content: unknown) => (content === null ? NullAsEmpty : typeof content === 'string' ? AnyString : parts)) as v.GenericSchema<unknown, string>, '');
}

const textOf = (field: 'text' | 'refusal') => v.pipe(plainObject({ [field]: Text }, `a part with "${field}"`, HELP), v.transform((p) => p[field] as string));

// ---- OpenAI chat completions

const OPENAI_PART_TYPES = '"text", "input_text", "output_text" or "refusal" (images and audio cannot be scored)';

const OpenAITextPart = discriminated(
  'type',
  { text: textOf('text'), input_text: textOf('text'), output_text: textOf('text'), refusal: textOf('refusal') },
  'a string or a text part {type: "text", text}',
  OPENAI_PART_TYPES,
);

const OpenAIPart = v.lazy((part: unknown) => (typeof part === 'string' ? AnyString : OpenAITextPart)) as v.GenericSchema<unknown, string>;

const OpenAIContent = textContent(OpenAIPart, 'a string, null or an array of text parts');

const OpenAIToolCall = plainObject(
  { id: v.optional(v.unknown()), function: plainObject({ name: Name, arguments: JsonStringOrValue }, 'the function {name, arguments}', HELP) },
  'a tool call {id, type: "function", function: {name, arguments}}',
  HELP,
);

/** One OpenAI message, before tool_call_id is resolved against the earlier calls. */
interface OpenAIParsed {
  message: Message;
  /** The ids of this assistant message's calls, index for index (a call without a string id has none). */
  callIds?: Array<string | undefined>;
  /** The id a tool message answers. */
  toolCallId?: string;
}

const plainMessage = (role: 'system' | 'user') =>
  v.pipe(plainObject({ content: OpenAIContent }, 'a message object {role, content}', HELP), v.transform((m): OpenAIParsed => ({ message: { role, content: m.content } })));

const OpenAIMessage = discriminated(
  'role',
  {
    system: plainMessage('system'),
    // "developer" is OpenAI's newer name for the system role.
    developer: plainMessage('system'),
    user: plainMessage('user'),
    assistant: v.pipe(
      plainObject({ content: OpenAIContent, tool_calls: v.nullish(arrayOf(OpenAIToolCall, 'an array of tool calls')) }, 'a message object {role, content, tool_calls?}', HELP),
      v.transform((m): OpenAIParsed => {
        const message: Message = { role: 'assistant', content: m.content };
        const calls = m.tool_calls ?? [];
        if (calls.length > 0) message.tool_calls = calls.map((c): MessageToolCall => ({ name: c.function.name, arguments: c.function.arguments }));
        return { message, callIds: calls.map((c) => (typeof c.id === 'string' ? c.id : undefined)) };
      }),
    ),
    tool: v.pipe(
      plainObject({ content: OpenAIContent, tool_call_id: Text }, 'a message object {role, content, tool_call_id}', HELP),
      v.transform((m): OpenAIParsed => ({ message: { role: 'tool', content: m.content }, toolCallId: m.tool_call_id })),
    ),
    function: v.pipe(
      plainObject({ content: OpenAIContent, name: Name }, 'a message object {role, content, name}', HELP),
      v.transform((m): OpenAIParsed => ({ message: { role: 'tool', content: m.content, tool_name: m.name } })),
    ),
  },
  'a message object {role, content}',
  'one of "system", "developer", "user", "assistant", "tool", "function"',
);

const OpenAIMessages = arrayOf(OpenAIMessage, 'an array of OpenAI chat messages');

const knownIds = (ids: Map<string, string>): string => [...ids.keys()].map((k) => `"${k}"`).join(', ') || 'none';

/** Converts OpenAI chat-completions messages (string-JSON arguments, tool_call_id) into guard messages. */
export function fromOpenAIMessages(messages: unknown): Message[] {
  const parsed = parseInput(OpenAIMessages, messages, 'messages');
  const nameById = new Map<string, string>();
  return parsed.map(({ message, callIds, toolCallId }, i): Message => {
    callIds?.forEach((id, j) => {
      const call = message.tool_calls?.[j];
      if (id !== undefined && call !== undefined) nameById.set(id, call.name);
    });
    if (toolCallId === undefined) return message;
    const name = nameById.get(toolCallId);
    if (name === undefined) {
      throw inputError(`messages[${i}].tool_call_id`, `received ${describeValue(toolCallId)}, which matches no earlier assistant tool call; expected the id of one (known: ${knownIds(nameById)})`, {
        received: describeValue(toolCallId),
        toolCallId,
      });
    }
    return { ...message, tool_name: name };
  });
}

/** Converts an OpenAI assistant tool call `{function: {name, arguments}}` into the proposed action, its arguments parsed from their JSON string. */
export function fromOpenAIToolCall(call: unknown): ToolCall {
  const parsed = parseInput(OpenAIToolCall, call, 'action');
  return { name: parsed.function.name, arguments: parsed.function.arguments };
}

// ---- Anthropic Messages

const AnthropicTextBlock = discriminated('type', { text: textOf('text') }, 'a text block {type: "text", text}', '"text" (only text blocks can be scored here)');

const AnthropicText = textContent(AnthropicTextBlock, 'a string or an array of content blocks');

const ToolUse = plainObject({ name: Name, id: Text, input: JsonOrEmpty }, 'a tool_use block {type: "tool_use", id, name, input}', HELP);

/** What one block of an assistant turn adds: text, a call, or nothing (thinking). */
type AssistantPart = { text: string } | { call: MessageToolCall; id: string } | null;

const AssistantBlock = discriminated(
  'type',
  {
    text: v.pipe(textOf('text'), v.transform((text): AssistantPart => ({ text }))),
    tool_use: v.pipe(ToolUse, v.transform((b): AssistantPart => ({ call: { name: b.name, arguments: b.input }, id: b.id }))),
    // Thinking blocks carry signatures, not conversation text; the API itself does not feed them back as content, so they are skipped.
    thinking: v.pipe(v.unknown(), v.transform((): AssistantPart => null)),
    redacted_thinking: v.pipe(v.unknown(), v.transform((): AssistantPart => null)),
  },
  'a content block',
  '"text", "tool_use", "thinking" or "redacted_thinking"',
);

/** What one block of a user turn adds: text, or a tool result still to be matched to its tool_use. */
type UserPart = { text: string } | { toolUseId: string; content: string };

const UserBlock = discriminated(
  'type',
  {
    text: v.pipe(textOf('text'), v.transform((text): UserPart => ({ text }))),
    tool_result: v.pipe(
      plainObject({ tool_use_id: Text, content: AnthropicText }, 'a tool_result block {type: "tool_result", tool_use_id, content}', HELP),
      v.transform((b): UserPart => ({ toolUseId: b.tool_use_id, content: b.content })),
    ),
  },
  'a content block',
  '"text" or "tool_result"',
);

function blocksOr<T>(block: v.GenericSchema<unknown, T>) {
  const blocks = arrayOf(block, 'a string or an array of content blocks');
  return v.lazy((content: unknown) => (typeof content === 'string' ? AnyString : blocks)) as v.GenericSchema<unknown, string | T[]>;
}

const AnthropicMessage = discriminated(
  'role',
  {
    user: v.pipe(plainObject({ content: blocksOr(UserBlock) }, 'a message object {role, content}', HELP), v.transform((m) => ({ role: 'user' as const, content: m.content }))),
    assistant: v.pipe(plainObject({ content: blocksOr(AssistantBlock) }, 'a message object {role, content}', HELP), v.transform((m) => ({ role: 'assistant' as const, content: m.content }))),
  },
  'a message object {role, content}',
  '"user" or "assistant" (system goes in the separate system parameter)',
);

const AnthropicMessages = arrayOf(AnthropicMessage, 'an array of Anthropic messages');

/** Converts Anthropic Messages API input (`system` parameter, text / tool_use / tool_result blocks) into guard messages; tool results become tool messages. */
export function fromAnthropicMessages(messages: unknown, system?: unknown): Message[] {
  const parsed = parseInput(AnthropicMessages, messages, 'messages');
  const out: Message[] = [];
  if (system !== undefined && system !== null) out.push({ role: 'system', content: parseInput(AnthropicText, system, 'system') });
  const nameById = new Map<string, string>();
  parsed.forEach((m, i) => {
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
    } else if (m.role === 'assistant') {
      const parts = m.content as AssistantPart[];
      const texts: string[] = [];
      const calls: MessageToolCall[] = [];
      for (const part of parts) {
        if (part === null) continue;
        if ('text' in part) texts.push(part.text);
        else {
          nameById.set(part.id, part.call.name);
          calls.push(part.call);
        }
      }
      const message: Message = { role: 'assistant', content: joined(texts) };
      if (calls.length > 0) message.tool_calls = calls;
      out.push(message);
    } else {
      // A user turn may interleave tool results and text; results come first in the API, and order is kept.
      const pendingText: string[] = [];
      const flushText = (): void => {
        if (pendingText.length > 0) out.push({ role: 'user', content: joined(pendingText.splice(0)) });
      };
      (m.content as UserPart[]).forEach((part, j) => {
        if ('text' in part) {
          pendingText.push(part.text);
          return;
        }
        flushText();
        const name = nameById.get(part.toolUseId);
        if (name === undefined) {
          throw inputError(`messages[${i}].content[${j}].tool_use_id`, `received ${describeValue(part.toolUseId)}, which matches no earlier tool_use block; expected the id of one (known: ${knownIds(nameById)})`, {
            received: describeValue(part.toolUseId),
            toolUseId: part.toolUseId,
          });
        }
        out.push({ role: 'tool', content: part.content, tool_name: name });
      });
      flushText();
    }
  });
  return out;
}

// The proposed action needs no id: nothing answers it yet.
const ToolUseAction = discriminated(
  'type',
  { tool_use: plainObject({ name: Name, input: JsonOrEmpty }, 'a tool_use block {type: "tool_use", id, name, input}', HELP) },
  'an Anthropic tool_use block {type: "tool_use", id, name, input}',
  '"tool_use"',
);

/** Converts an Anthropic `tool_use` block into the proposed action. */
export function fromAnthropicToolUse(block: unknown): ToolCall {
  const parsed = parseInput(ToolUseAction, block, 'action');
  return { name: parsed.name, arguments: parsed.input };
}

export { requireName, requireString, normalizeTool, normalizeTools } from './tools.js';
export { parseGuardInput } from './guard-input.js';
