/** actionLayout (engine/call-encoding.ts): which action tokens are the tool name, and which rows hold which argument value. */
import { describe, expect, it } from 'vitest';
import { argumentValueList } from '../../src/core/tool-poisoning.js';
import { actionLayout } from '../../src/engine/call-encoding.js';
import { callJson } from '../../src/engine/chat-format.js';

/** One token a byte: each row of the layout is one byte of the call's JSON. */
function layoutOf(name: string, args: unknown) {
  const text = callJson(name, args);
  const ids = [...new TextEncoder().encode(text)];
  return { text, layout: actionLayout({ tokenByteLength: () => 1 }, ids, name, args) };
}

describe('actionLayout', () => {
  it('gives each argument value its own rows, indexed as argumentValueList lists the values', () => {
    const args = { to: 'bob@x.org', n: 12, ok: true, skip: undefined, bcc: 'a@b.io' };
    const { text, layout } = layoutOf('send_email', args);
    const values = argumentValueList(args);
    expect(layout.valueRows.map((r) => r.value)).toEqual([0, 1, 2, 3]);
    expect(layout.valueRows.map((r) => text.slice(r.start, r.end))).toEqual(values.map((v) => JSON.stringify(v)));
  });

  it('reads arguments that are not an object as one value, after the name rows', () => {
    const { text, layout } = layoutOf('f', ['x', 'y']);
    expect(layout.valueRows.map((r) => [r.value, text.slice(r.start, r.end)])).toEqual([[0, '["x", "y"]']]);
    expect(argumentValueList(['x', 'y'])).toEqual([['x', 'y']]);
    expect(text.slice(0, layout.parts.filter((p) => p === 'name').length)).toBe('{"name": "f"');
  });
});
