import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, MAX_ACTION_ARGUMENTS_CHARS, MAX_FIELD_CHARS, MAX_MESSAGES, MAX_SPANS, resolveOptions } from '../../src/core/index.js';
import { buildContext } from '../../src/core/context.js';
import { parseGuardInput } from '../../src/core/guard-input.js';
import { requirement } from '../requirements.js';

// ../shared beside the checkout, as on every developer's machine and in CI.
const DEV_SET = join(import.meta.dirname, '../../../shared/datasets/agentdojo/dev.jsonl');
const USER = { role: 'user', content: 'Pay my rent.' };
const ACTION = { name: 'send_money', arguments: { amount: 5 } };

function errorOf(value: unknown): InvalidInputError {
  try {
    parseGuardInput(value);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected parseGuardInput to throw');
}

describe('guard input validation', () => {
  it('rejects a case without a user message, in parseGuardInput and buildContext alike', () => {
    const input = { messages: [{ role: 'system', content: 'You are helpful.' }], action: ACTION };
    expect(errorOf(input).message).toMatch(/^input\.messages: received 1 messages with no user message/);
    expect(() => buildContext({ messages: [{ role: 'system', content: 'x' }], action: ACTION }, resolveOptions())).toThrow(errorOf(input).message);
  });

  it('rejects an unknown role naming the field, the value received and the allowed roles', () => {
    expect(errorOf({ messages: [USER, { role: 'bot', content: 'x' }], action: ACTION }).message).toBe(
      'input.messages[1].role: received the string "bot"; expected one of "system", "user", "assistant", "tool".',
    );
  });

  it('rejects a tool result without a tool name', () => {
    expect(errorOf({ messages: [USER, { role: 'tool', content: 'IBAN X' }], action: ACTION }).message).toMatch(/^input\.messages\[1\]\.tool_name: missing/);
  });

  it('rejects a tool name or tool calls on a message of the wrong role instead of dropping them', () => {
    expect(errorOf({ messages: [{ ...USER, tool_name: 'x' }], action: ACTION }).message).toMatch(/^input\.messages\[0\]\.tool_name: .*only tool messages/);
    expect(errorOf({ messages: [{ ...USER, tool_calls: [] }], action: ACTION }).message).toMatch(/^input\.messages\[0\]\.tool_calls: .*only assistant messages/);
  });

  it('accepts null, list, scalar and nested arguments unchanged (valid but unusual input gets a verdict)', () => {
    for (const args of [null, [1, 'a', null], 'text', 3, { a: { b: [{ c: null }] } }]) {
      expect(parseGuardInput({ messages: [USER], action: { name: 'f', arguments: args } }).action.arguments).toEqual(args);
    }
  });

  it('rejects missing action arguments rather than inventing {}', () => {
    expect(errorOf({ messages: [USER], action: { name: 'f' } }).message).toMatch(/^input\.action\.arguments: missing; expected any JSON value/);
  });

  it('rejects non-JSON argument values naming the path inside the arguments', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ f: () => 1 }, /^input\.action\.arguments\.f: received a function/],
      [{ x: undefined }, /^input\.action\.arguments\.x: received undefined/],
      [{ x: Number.NaN }, /^input\.action\.arguments\.x: received the number NaN/],
      [{ x: [1, Number.POSITIVE_INFINITY] }, /^input\.action\.arguments\.x\[1\]: received the number Infinity/],
      [{ x: 10n }, /^input\.action\.arguments\.x: received the BigInt 10n/],
      [{ x: new Date(0) }, /^input\.action\.arguments\.x: received an instance of Date/],
      [{ x: new Map() }, /^input\.action\.arguments\.x: received an instance of Map/],
      [{ 'a b': new (class Money {})() }, /^input\.action\.arguments\["a b"\]: received an instance of Money/],
    ];
    for (const [args, pattern] of cases) expect(errorOf({ messages: [USER], action: { name: 'f', arguments: args } }).message).toMatch(pattern);
  });

  it('rejects cyclic values instead of overflowing the stack', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    expect(errorOf({ messages: [USER], action: { name: 'f', arguments: cyclic } }).message).toMatch(/^input\.action\.arguments\.self: received a cyclic reference/);
  });

  it('rejects values that throw while being read as bad input naming the field, not as a crash', () => {
    const hostile = Object.defineProperty({}, 'x', { enumerable: true, get: () => { throw new TypeError('boom'); } });
    const error = errorOf({ messages: [USER], action: { name: 'f', arguments: hostile } });
    expect(error.message).toMatch(/^input\.action\.arguments\.x: the value could not be read \(boom\)/);
    expect(error.details['where']).toBe('input.action.arguments.x');
  });

  it('rejects a string over the per-field cap and accepts one at the cap', () => {
    const at = 'a'.repeat(MAX_FIELD_CHARS);
    expect(parseGuardInput({ messages: [USER, { role: 'tool', content: at, tool_name: 'read' }], action: ACTION }).messages[1]?.content.length).toBe(MAX_FIELD_CHARS);
    expect(errorOf({ messages: [USER, { role: 'tool', content: `${at}a`, tool_name: 'read' }], action: ACTION }).message).toBe(
      `input.messages[1].content: received ${MAX_FIELD_CHARS + 1} characters; at most ${MAX_FIELD_CHARS} are allowed.`,
    );
  });

  it('rejects more messages, tool results or argument JSON than the documented limits', () => {
    expect(errorOf({ messages: Array.from({ length: MAX_MESSAGES + 1 }, () => USER), action: ACTION }).message).toMatch(/^input\.messages: received \d+ items; at most 2048/);
    const results = Array.from({ length: MAX_SPANS + 1 }, () => ({ role: 'tool', content: 'r', tool_name: 'read' }));
    expect(errorOf({ messages: [USER, ...results], action: ACTION }).message).toMatch(/received 257 tool results; at most 256/);
    expect(errorOf({ messages: [USER], action: { name: 'f', arguments: { x: 'a'.repeat(MAX_ACTION_ARGUMENTS_CHARS) } } }).message).toMatch(/^input\.action\.arguments: received \d+ characters of JSON/);
  });

  it('accepts NUL bytes in content as hostile but valid text', () => {
    expect(parseGuardInput({ messages: [USER, { role: 'tool', content: 'a\u0000b', tool_name: 'read' }], action: ACTION }).messages[1]?.content).toBe('a\u0000b');
  });

  it('rejects NUL bytes in the action name, tool names and trust lists', () => {
    expect(errorOf({ messages: [USER], action: { name: 'send\u0000money', arguments: {} } }).message).toMatch(/^input\.action\.name: received a control character \(U\+0000\) at index 4/);
    expect(errorOf({ messages: [USER, { role: 'tool', content: 'x', tool_name: 'r\u0000' }], action: ACTION }).message).toMatch(/^input\.messages\[1\]\.tool_name: /);
    expect(errorOf({ messages: [USER], action: ACTION, untrusted_tools: ['ok', 'b\u0000'] }).message).toMatch(/^input\.untrusted_tools\[1\]: /);
    expect(errorOf({ messages: [USER], action: ACTION, tools: [{ name: 't\u0000' }] }).message).toMatch(/^input\.tools\[0\]\.name: /);
  });

  it('rejects lone UTF-16 surrogates with the field path and index, and accepts paired ones', () => {
    expect(errorOf({ messages: [{ role: 'user', content: 'ab\uD83D' }], action: ACTION }).message).toBe(
      'input.messages[0].content: received a lone UTF-16 surrogate (U+D83D) at index 2; allowed is well-formed UTF-16 text.',
    );
    expect(errorOf({ messages: [USER], action: { name: 'f', arguments: { note: '\uDC00x' } } }).message).toMatch(/^input\.action\.arguments\.note: received a lone UTF-16 surrogate \(U\+DC00\) at index 0/);
    expect(parseGuardInput({ messages: [{ role: 'user', content: 'pay \uD83D\uDCB0' }], action: ACTION }).messages[0]?.content).toBe('pay \uD83D\uDCB0');
  });

  it('rejects wrong types without coercing them (numbers as content, arrays as objects)', () => {
    expect(errorOf({ messages: [{ role: 'user', content: 5 }], action: ACTION }).message).toBe('input.messages[0].content: received the number 5; expected a string.');
    expect(errorOf({ messages: [USER], action: [ACTION] }).message).toMatch(/^input\.action: received an array of 1 item; expected the proposed call/);
    expect(errorOf([]).message).toMatch(/^input: received an array of 0 items; expected a guard case object/);
  });

  it('ignores extra fields and returns a clean copy', () => {
    const out = parseGuardInput({ id: 7, label: 'x', messages: [{ ...USER, extra: true }], action: { ...ACTION, extra: 1 } });
    expect(out).toEqual({ messages: [USER], action: ACTION });
  });

  it.skipIf(!requirement(existsSync(DEV_SET), `the AgentDojo dev set (${DEV_SET})`))('parses every line of the AgentDojo dev set', () => {
    const lines = readFileSync(DEV_SET, 'utf8').split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBe(800);
    for (const line of lines) expect(() => parseGuardInput(JSON.parse(line) as unknown)).not.toThrow();
  });
});
