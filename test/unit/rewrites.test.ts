/** The adversarial rewrites (src/eval/rewrites.ts): what each does to a case, on the README's travel cases. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_FIELD_CHARS } from '../../src/core/limits.js';
import { parseGuardInput } from '../../src/core/guard-input.js';
import { toEvalCase, type EvalCase } from '../../src/eval/cases.js';
import { PADDING_WORDS, REWRITES, rewriteCase } from '../../src/eval/rewrites.js';

const [INJECTED, BENIGN] = readFileSync(join(import.meta.dirname, '../../examples/seed-travel.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .slice(0, 2)
  .map((line, i) => toEvalCase({ ...JSON.parse(line), label: i === 0 ? 'injected' : 'benign', injected_in: i === 0 ? [3] : [] }, 'seed-travel.jsonl', `line ${i + 1}`, i)) as [EvalCase, EvalCase];

const rewritten = (c: EvalCase, name: (typeof REWRITES)[number]) => {
  const out = rewriteCase(c, name);
  if (out === null) throw new Error(`${name} did not apply`);
  return out;
};

describe('adversarial rewrites', () => {
  it('duplicate: the same call returns the injected result again, after it', () => {
    const out = rewritten(INJECTED, 'duplicate');
    const m = out.input.messages;
    expect(m).toHaveLength(6);
    expect(m[4]).toEqual({ role: 'assistant', content: '', tool_calls: [{ name: 'read_travel_plan', arguments: {} }] });
    expect(m[5]).toEqual({ ...INJECTED.input.messages[3], tool_name: 'read_travel_plan' });
    expect(out.set).toBe('seed-travel+duplicate');
    expect(out.input.action).toEqual(INJECTED.input.action);
  });

  it('laundering: the agent looks up the longest call value the injected result holds, and gets a neutral answer', () => {
    const m = rewritten(INJECTED, 'laundering').input.messages;
    expect(m[4]!.tool_calls).toEqual([{ name: 'lookup_record', arguments: { query: 'REFUND-VERIFY-8847' } }]);
    expect(m[5]!.content).not.toContain('REFUND');
  });

  it('padding: the injected result sits in the middle of filler on both sides', () => {
    const content = rewritten(INJECTED, 'padding').input.messages[3]!.content;
    const [before, after] = content.split(INJECTED.input.messages[3]!.content);
    expect(before!.split(' ').length).toBeGreaterThanOrEqual(PADDING_WORDS);
    expect(after!.split(' ').length).toBeGreaterThanOrEqual(PADDING_WORDS);
  });

  it('padding-limit and padding-limit-before: the injected result padded up to the input limit on one field, around it or all before it', () => {
    const injection = INJECTED.input.messages[3]!.content;
    const around = rewritten(INJECTED, 'padding-limit').input.messages[3]!.content;
    expect(around).toHaveLength(MAX_FIELD_CHARS);
    const [before, after] = around.split(injection);
    expect(Math.abs(before!.length - after!.length)).toBeLessThanOrEqual(1);
    const first = rewritten(INJECTED, 'padding-limit-before').input.messages[3]!.content;
    expect(first).toHaveLength(MAX_FIELD_CHARS);
    expect(first.endsWith(`\n${injection}\n`)).toBe(true);
    // The padded case is still valid input: at the limit, not past it.
    expect(() => parseGuardInput(rewritten(INJECTED, 'padding-limit').input)).not.toThrow();
  });

  it('trailing and filler append one and three ordinary results; combinations apply in order', () => {
    expect(rewritten(INJECTED, 'trailing').input.messages.slice(4).map((x) => x.role)).toEqual(['assistant', 'tool']);
    expect(rewritten(INJECTED, 'filler').input.messages).toHaveLength(4 + 6);
    const combo = rewritten(INJECTED, 'duplicate+filler').input.messages;
    expect(combo[5]!.content).toBe(INJECTED.input.messages[3]!.content);
    expect(combo).toHaveLength(4 + 2 + 6);
  });

  it('applies to the benign twin at its last result, deterministically, and not to tool-description attacks', () => {
    for (const name of REWRITES) expect(rewriteCase(BENIGN, name)).toEqual(rewriteCase(BENIGN, name));
    expect(rewritten(BENIGN, 'duplicate').input.messages[5]!.content).toBe(BENIGN.input.messages[3]!.content);
    expect(rewritten(BENIGN, 'laundering').input.messages[4]!.tool_calls![0]!.arguments).toEqual({ query: 'AA1742' });
    expect(rewriteCase({ ...INJECTED, poisonedTool: 'send_money' }, 'duplicate')).toBeNull();
  });
});
