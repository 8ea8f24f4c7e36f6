import { InvalidInputError } from './errors.js';
import { describeType, isPlainObject, toJsonValue } from './json.js';
import { requireName, requireString } from './tools.js';
import type { JsonValue, Message, MessageToolCall, Role, ToolCall } from './types.js';

const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'tool'];

function parseArgumentsString(text: string, where: string): JsonValue {
  // OpenAI sends arguments as a JSON string; an empty string means no arguments.
  if (text.trim() === '') return {};
  try {
    return toJsonValue(JSON.parse(text) as unknown, where);
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    throw new InvalidInputError(`${where}: expected a JSON string, received ${JSON.stringify(text.slice(0, 80))} which does not parse.`, { where }, { cause: error });
  }
}

function textOfContent(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts: string[] = [];
    content.forEach((part, i) => {
      if (typeof part === 'string') {
        parts.push(part);
      } else if (isPlainObject(part) && (part['type'] === 'text' || part['type'] === 'input_text' || part['type'] === 'output_text')) {
        parts.push(requireString(part['text'], `${where}[${i}].text`));
      } else if (isPlainObject(part) && part['type'] === 'refusal') {
        parts.push(requireString(part['refusal'], `${where}[${i}].refusal`));
      } else {
        const type = isPlainObject(part) ? String(part['type']) : describeType(part);
        throw new InvalidInputError(`${where}[${i}]: unsupported content part type "${type}"; allowed are "text" parts (images and audio cannot be scored).`, { where, type });
      }
    });
    // Parts are joined with newlines, matching how AgentDojo normalised block lists.
    return parts.join('\n');
  }
  throw new InvalidInputError(`${where}: expected a string, null or an array of text parts, received ${describeType(content)}.`, { where });
}

/** Converts OpenAI chat-completions messages (string-JSON arguments, tool_call_id) into guard messages. */
export function fromOpenAIMessages(messages: unknown): Message[] {
  if (!Array.isArray(messages)) {
    throw new InvalidInputError(`messages: expected an array of OpenAI chat messages, received ${describeType(messages)}.`);
  }
  const nameById = new Map<string, string>();
  return messages.map((raw, i): Message => {
    const where = `messages[${i}]`;
    if (!isPlainObject(raw)) throw new InvalidInputError(`${where}: expected a message object, received ${describeType(raw)}.`, { where });
    let role = raw['role'];
    // "developer" is OpenAI's newer name for the system role.
    if (role === 'developer') role = 'system';
    if (role === 'function') {
      return { role: 'tool', content: textOfContent(raw['content'], `${where}.content`), tool_name: requireName(raw['name'], `${where}.name`) };
    }
    if (!ROLES.includes(role as Role)) {
      throw new InvalidInputError(`${where}.role: received ${JSON.stringify(role)}; allowed are "system", "developer", "user", "assistant", "tool".`, { where });
    }
    const content = textOfContent(raw['content'], `${where}.content`);
    if (role === 'assistant') {
      const message: Message = { role: 'assistant', content };
      const calls = raw['tool_calls'];
      if (calls !== undefined && calls !== null) {
        if (!Array.isArray(calls)) throw new InvalidInputError(`${where}.tool_calls: expected an array, received ${describeType(calls)}.`, { where });
        const out: MessageToolCall[] = calls.map((call, j) => {
          const cw = `${where}.tool_calls[${j}]`;
          if (!isPlainObject(call) || !isPlainObject(call['function'])) {
            throw new InvalidInputError(`${cw}: expected {id, type: "function", function: {name, arguments}}, received ${describeType(call)}.`, { where: cw });
          }
          const fn = call['function'];
          const name = requireName(fn['name'], `${cw}.function.name`);
          const args = fn['arguments'];
          const parsed = typeof args === 'string' ? parseArgumentsString(args, `${cw}.function.arguments`) : toJsonValue(args ?? {}, `${cw}.function.arguments`);
          if (typeof call['id'] === 'string') nameById.set(call['id'], name);
          return { name, arguments: parsed };
        });
        if (out.length > 0) message.tool_calls = out;
      }
      return message;
    }
    if (role === 'tool') {
      const id = requireString(raw['tool_call_id'], `${where}.tool_call_id`);
      const name = nameById.get(id);
      if (name === undefined) {
        throw new InvalidInputError(`${where}.tool_call_id: "${id}" matches no earlier assistant tool call; known ids: ${[...nameById.keys()].map((k) => `"${k}"`).join(', ') || 'none'}.`, { where, toolCallId: id });
      }
      return { role: 'tool', content, tool_name: name };
    }
    return { role: role as 'system' | 'user', content };
  });
}

/** Converts an OpenAI assistant tool call `{function: {name, arguments}}` into the proposed action, keeping the argument string as raw text. */
export function fromOpenAIToolCall(call: unknown): ToolCall {
  if (!isPlainObject(call) || !isPlainObject(call['function'])) {
    throw new InvalidInputError(`action: expected an OpenAI tool call {id, type: "function", function: {name, arguments}}, received ${describeType(call)}.`);
  }
  const fn = call['function'];
  const name = requireName(fn['name'], 'action.function.name');
  const args = fn['arguments'];
  if (typeof args === 'string') return { name, arguments: parseArgumentsString(args, 'action.function.arguments') };
  return { name, arguments: toJsonValue(args ?? {}, 'action.function.arguments') };
}

function anthropicText(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidInputError(`${where}: expected a string or an array of content blocks, received ${describeType(content)}.`, { where });
  const parts: string[] = [];
  content.forEach((block, i) => {
    if (isPlainObject(block) && block['type'] === 'text') parts.push(requireString(block['text'], `${where}[${i}].text`));
    else {
      const type = isPlainObject(block) ? String(block['type']) : describeType(block);
      throw new InvalidInputError(`${where}[${i}]: unsupported block type "${type}" here; allowed is "text".`, { where, type });
    }
  });
  return parts.join('\n');
}

/** Converts Anthropic Messages API input (`system` parameter, text / tool_use / tool_result blocks) into guard messages; tool results become tool messages. */
export function fromAnthropicMessages(messages: unknown, system?: unknown): Message[] {
  if (!Array.isArray(messages)) {
    throw new InvalidInputError(`messages: expected an array of Anthropic messages, received ${describeType(messages)}.`);
  }
  const out: Message[] = [];
  if (system !== undefined && system !== null) {
    out.push({ role: 'system', content: anthropicText(system, 'system') });
  }
  const nameById = new Map<string, string>();
  messages.forEach((raw, i) => {
    const where = `messages[${i}]`;
    if (!isPlainObject(raw)) throw new InvalidInputError(`${where}: expected a message object, received ${describeType(raw)}.`, { where });
    const role = raw['role'];
    if (role !== 'user' && role !== 'assistant') {
      throw new InvalidInputError(`${where}.role: received ${JSON.stringify(role)}; allowed are "user" and "assistant" (system goes in the separate system parameter).`, { where });
    }
    const content = raw['content'];
    if (typeof content === 'string') {
      out.push({ role, content });
      return;
    }
    if (!Array.isArray(content)) throw new InvalidInputError(`${where}.content: expected a string or an array of blocks, received ${describeType(content)}.`, { where });
    if (role === 'assistant') {
      const texts: string[] = [];
      const calls: MessageToolCall[] = [];
      content.forEach((block, j) => {
        const bw = `${where}.content[${j}]`;
        if (!isPlainObject(block)) throw new InvalidInputError(`${bw}: expected a content block, received ${describeType(block)}.`, { where: bw });
        if (block['type'] === 'text') texts.push(requireString(block['text'], `${bw}.text`));
        else if (block['type'] === 'tool_use') {
          const name = requireName(block['name'], `${bw}.name`);
          nameById.set(requireString(block['id'], `${bw}.id`), name);
          calls.push({ name, arguments: toJsonValue(block['input'] ?? {}, `${bw}.input`) });
        } else if (block['type'] === 'thinking' || block['type'] === 'redacted_thinking') {
          // Thinking blocks carry signatures, not conversation text; the API itself does not feed them back as content, so they are skipped.
        } else {
          throw new InvalidInputError(`${bw}: unsupported assistant block type ${JSON.stringify(block['type'])}; allowed are "text", "tool_use", "thinking".`, { where: bw });
        }
      });
      const message: Message = { role: 'assistant', content: texts.join('\n') };
      if (calls.length > 0) message.tool_calls = calls;
      out.push(message);
      return;
    }
    // A user turn may interleave tool results and text; results come first in the API, and order is kept.
    const pendingText: string[] = [];
    const flushText = (): void => {
      if (pendingText.length > 0) out.push({ role: 'user', content: pendingText.splice(0).join('\n') });
    };
    content.forEach((block, j) => {
      const bw = `${where}.content[${j}]`;
      if (!isPlainObject(block)) throw new InvalidInputError(`${bw}: expected a content block, received ${describeType(block)}.`, { where: bw });
      if (block['type'] === 'text') pendingText.push(requireString(block['text'], `${bw}.text`));
      else if (block['type'] === 'tool_result') {
        flushText();
        const id = requireString(block['tool_use_id'], `${bw}.tool_use_id`);
        const name = nameById.get(id);
        if (name === undefined) {
          throw new InvalidInputError(`${bw}.tool_use_id: "${id}" matches no earlier tool_use block; known ids: ${[...nameById.keys()].map((k) => `"${k}"`).join(', ') || 'none'}.`, { where: bw, toolUseId: id });
        }
        out.push({ role: 'tool', content: anthropicText(block['content'], `${bw}.content`), tool_name: name });
      } else {
        throw new InvalidInputError(`${bw}: unsupported user block type ${JSON.stringify(block['type'])}; allowed are "text" and "tool_result".`, { where: bw });
      }
    });
    flushText();
  });
  return out;
}

/** Converts an Anthropic `tool_use` block into the proposed action. */
export function fromAnthropicToolUse(block: unknown): ToolCall {
  if (!isPlainObject(block) || block['type'] !== 'tool_use') {
    throw new InvalidInputError(`action: expected an Anthropic tool_use block {type: "tool_use", id, name, input}, received ${describeType(block)}.`);
  }
  return { name: requireName(block['name'], 'action.name'), arguments: toJsonValue(block['input'] ?? {}, 'action.input') };
}

export { requireName, requireString, normalizeTool, normalizeTools } from './tools.js';
export { parseGuardInput } from './guard-input.js';
