import { describe, expect, it } from 'vitest';
import { fromAnthropicMessages, fromAnthropicToolUse, fromOpenAIMessages, fromOpenAIToolCall, InvalidInputError } from '../../src/core/index.js';
import { parseGuardInput } from '../../src/core/guard-input.js';
import { normalizeTool, normalizeTools } from '../../src/core/tools.js';

const SCHEMA = { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] };

describe('tool adapters', () => {
  it('normalises flat, OpenAI function and MCP tools to the same ToolSpec', () => {
    const expected = { name: 'send_money', description: 'Send money.', parameters: SCHEMA };
    expect(normalizeTool({ name: 'send_money', description: 'Send money.', parameters: SCHEMA })).toEqual(expected);
    expect(normalizeTool({ type: 'function', function: { name: 'send_money', description: 'Send money.', parameters: SCHEMA } })).toEqual(expected);
    expect(normalizeTool({ name: 'send_money', description: 'Send money.', inputSchema: SCHEMA })).toEqual(expected);
  });

  it('fills a missing description and schema with empty ones', () => {
    expect(normalizeTool({ name: 'ping' })).toEqual({ name: 'ping', description: '', parameters: { type: 'object', properties: {} } });
  });

  it('rejects duplicate tool names and tools without a name, naming where and what was received', () => {
    expect(() => normalizeTools([{ name: 'a' }, { name: 'a' }])).toThrow('tools[1].name: received the string "a", the name of tools[0] too; expected unique tool names.');
    expect(() => normalizeTool({ description: 'x' })).toThrow(InvalidInputError);
    expect(() => normalizeTool({ description: 'x' })).toThrow('tool.name: missing; expected a non-empty name.');
    expect(() => normalizeTool({ type: 'function', function: { name: 'send\u0000money' } })).toThrow(/^tool\.function\.name: received a control character \(U\+0000\)/);
  });

  it('rejects a tool with both "parameters" and "inputSchema", and schemas that are not JSON objects', () => {
    expect(() => normalizeTool({ name: 'a', parameters: SCHEMA, inputSchema: SCHEMA })).toThrow(
      'tool: received both "parameters" and "inputSchema"; expected one schema (flat tools use "parameters", MCP tools "inputSchema").',
    );
    expect(() => normalizeTools([{ name: 'a', inputSchema: [SCHEMA] }], 'input.tools')).toThrow('input.tools[0].inputSchema: received an array of 1 item; expected a JSON schema object.');
    expect(() => normalizeTools('a', 'input.tools')).toThrow('input.tools: received the string "a"; expected an array of tools.');
  });
});

describe('OpenAI chat-completions adapter', () => {
  const messages = [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: [{ type: 'text', text: 'Book a flight' }, { type: 'text', text: 'to Paris' }] },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'search_flights', arguments: '{"to":"Paris","max":[1,null,{"a":true}]}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'AA123 $450' },
  ];

  it('parses string-JSON arguments, joins text parts, maps null content to "" and resolves tool_call_id to the tool name', () => {
    expect(fromOpenAIMessages(messages)).toEqual([
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Book a flight\nto Paris' },
      { role: 'assistant', content: '', tool_calls: [{ name: 'search_flights', arguments: { to: 'Paris', max: [1, null, { a: true }] } }] },
      { role: 'tool', content: 'AA123 $450', tool_name: 'search_flights' },
    ]);
  });

  it('throws a typed error naming the known ids when a tool_call_id is unresolvable', () => {
    const bad = [...messages.slice(0, 3), { role: 'tool', tool_call_id: 'call_9', content: 'x' }];
    expect(() => fromOpenAIMessages(bad)).toThrow(InvalidInputError);
    expect(() => fromOpenAIMessages(bad)).toThrow(
      'messages[3].tool_call_id: received the string "call_9", which matches no earlier assistant tool call; expected the id of one (known: "call_1").',
    );
  });

  it('names the part, what it received and the allowed types when a content part cannot be scored', () => {
    expect(() => fromOpenAIMessages([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }])).toThrow(
      'messages[0].content[0].type: received the string "image_url"; expected "text", "input_text", "output_text" or "refusal" (images and audio cannot be scored).',
    );
    expect(() => fromOpenAIMessages([{ role: 'bot', content: '' }])).toThrow(
      'messages[0].role: received the string "bot"; expected one of "system", "developer", "user", "assistant", "tool", "function".',
    );
    expect(() => fromOpenAIMessages('hi')).toThrow('messages: received the string "hi"; expected an array of OpenAI chat messages.');
  });

  it('throws a typed error on arguments that are not JSON', () => {
    expect(() => fromOpenAIToolCall({ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } })).toThrow(InvalidInputError);
    expect(() => fromOpenAIToolCall({ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } })).toThrow(
      /^action\.function\.arguments: received the string "\{oops", which does not parse \(.*\); expected a JSON string\.$/,
    );
    expect(() => fromOpenAIToolCall({ function: { name: 'f', arguments: '{"a":1e999}' } })).toThrow(/^action\.function\.arguments\.a: received the number Infinity/);
  });

  it('turns a proposed OpenAI tool call into an action', () => {
    expect(fromOpenAIToolCall({ id: 'c', type: 'function', function: { name: 'send_money', arguments: '{"amount":5}' } })).toEqual({ name: 'send_money', arguments: { amount: 5 } });
  });
});

describe('Anthropic messages adapter', () => {
  it('maps the system parameter, tool_use blocks and tool_result blocks (which become tool messages)', () => {
    const out = fromAnthropicMessages(
      [
        { role: 'user', content: 'Book a flight to Paris' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me search.' },
            { type: 'tool_use', id: 'tu_1', name: 'search_flights', input: { to: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'AA123 $450' }] },
            { type: 'text', text: 'Pick the cheapest.' },
          ],
        },
      ],
      'You are helpful.',
    );
    expect(out).toEqual([
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'Book a flight to Paris' },
      { role: 'assistant', content: 'Let me search.', tool_calls: [{ name: 'search_flights', arguments: { to: 'Paris' } }] },
      { role: 'tool', content: 'AA123 $450', tool_name: 'search_flights' },
      { role: 'user', content: 'Pick the cheapest.' },
    ]);
  });

  it('throws a typed error when a tool_result names an unknown tool_use_id', () => {
    expect(() => fromAnthropicMessages([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }])).toThrow(InvalidInputError);
    expect(() => fromAnthropicMessages([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }])).toThrow(
      'messages[0].content[0].tool_use_id: received the string "nope", which matches no earlier tool_use block; expected the id of one (known: none).',
    );
  });

  it('names the block, what it received and what is allowed for roles and block types it cannot read', () => {
    expect(() => fromAnthropicMessages([{ role: 'system', content: 'x' }])).toThrow(
      'messages[0].role: received the string "system"; expected "user" or "assistant" (system goes in the separate system parameter).',
    );
    expect(() => fromAnthropicMessages([{ role: 'assistant', content: [{ type: 'image' }] }])).toThrow(
      'messages[0].content[0].type: received the string "image"; expected "text", "tool_use", "thinking" or "redacted_thinking".',
    );
    expect(() => fromAnthropicMessages([{ role: 'user' }])).toThrow('messages[0].content: missing; expected a string or an array of content blocks.');
    expect(() => fromAnthropicMessages([{ role: 'user', content: 'x' }], [{ type: 'image' }])).toThrow('system[0].type: received the string "image"; expected "text" (only text blocks can be scored here).');
    expect(() => fromAnthropicToolUse({ type: 'text', text: 'x' })).toThrow('action.type: received the string "text"; expected "tool_use".');
  });

  it('skips thinking blocks and reads a missing tool_use input as no arguments', () => {
    expect(
      fromAnthropicMessages([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'redacted_thinking', data: 'x' }, { type: 'tool_use', id: 'a', name: 'ping' }] },
      ]),
    ).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', tool_calls: [{ name: 'ping', arguments: {} }] },
    ]);
  });

  it('turns a tool_use block into an action', () => {
    expect(fromAnthropicToolUse({ type: 'tool_use', id: 't', name: 'book_flight', input: { flight_id: 'AA1742' } })).toEqual({
      name: 'book_flight',
      arguments: { flight_id: 'AA1742' },
    });
  });
});

describe('guard case parsing', () => {
  it('accepts a dev.jsonl-shaped case, ignores extra fields and normalises its tools', () => {
    const input = parseGuardInput({
      id: 'adj-0',
      label: 'benign',
      messages: [
        { role: 'user', content: 'Pay the bill' },
        { role: 'tool', content: 'IBAN X', tool_name: 'read_file' },
      ],
      action: { name: 'send_money', arguments: { recipient: 'X', amount: null, tags: [] }, raw_text: '{"name": "send_money"}' },
      untrusted_tools: ['read_file'],
      tools: [{ type: 'function', function: { name: 'send_money', description: 'd', parameters: SCHEMA } }],
    });
    expect(Object.keys(input).sort()).toEqual(['action', 'messages', 'tools', 'untrusted_tools']);
    expect(input.tools?.[0]).toEqual({ name: 'send_money', description: 'd', parameters: SCHEMA });
    expect(input.action.arguments).toEqual({ recipient: 'X', amount: null, tags: [] });
  });

  it('rejects an unknown role with a message listing the allowed roles', () => {
    expect(() => parseGuardInput({ messages: [{ role: 'bot', content: '' }], action: { name: 'f', arguments: {} } })).toThrow(/"bot".*"system", "user", "assistant", "tool"/);
  });

  it('rejects non-JSON argument values such as Infinity', () => {
    expect(() => parseGuardInput({ messages: [], action: { name: 'f', arguments: { x: Number.POSITIVE_INFINITY } } })).toThrow(InvalidInputError);
  });
});
