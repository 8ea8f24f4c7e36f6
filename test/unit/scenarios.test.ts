import { describe, expect, it } from 'vitest';
import { CASE_KINDS, DOMAINS, POISON_STYLE_NAMES, RESULT_STYLE_NAMES, cleanFirstCalls, generateCases, splitOf } from '../../src/scenarios/index.js';
import type { GuardCase, Split } from '../../src/scenarios/index.js';

const COVERAGE_N = 2000;
const SPLITS: readonly Split[] = ['train', 'validation', 'test'];
const bySplit = new Map<Split, GuardCase[]>(SPLITS.map((s) => [s, generateCases({ split: s, seed: 7, n: COVERAGE_N })]));

function cases(split: Split): GuardCase[] {
  const c = bySplit.get(split);
  if (!c) throw new Error(`no cases for ${split}`);
  return c;
}

/** Everything the guard sees before the action, except assistant text after the injection and the poisoned description. */
function cleanContext(c: GuardCase): string {
  const firstInjected = c.injected_in[0] ?? Number.POSITIVE_INFINITY;
  const parts: string[] = [];
  c.messages.forEach((m, i) => {
    if (c.injected_in.includes(i)) return;
    if (m.role === 'assistant' && c.cot && (i > firstInjected || c.attack?.vector === 'tool_description')) {
      parts.push(JSON.stringify(m.tool_calls ?? []));
      return;
    }
    parts.push(m.content, JSON.stringify(m.tool_calls ?? []));
  });
  for (const t of c.tools) if (t.name !== c.poisoned_tool) parts.push(t.description, JSON.stringify(t.parameters));
  return parts.join('\n');
}

describe('scenario generator', () => {
  it('gives byte-identical output for the same split, seed and n', () => {
    const a = JSON.stringify(generateCases({ split: 'train', seed: 3, n: 300 }));
    const b = JSON.stringify(generateCases({ split: 'train', seed: 3, n: 300 }));
    expect(a).toBe(b);
  });

  it('gives different output for different seeds', () => {
    const a = generateCases({ split: 'train', seed: 1, n: 50 }).map((c) => c.action.raw_text);
    const b = generateCases({ split: 'train', seed: 2, n: 50 }).map((c) => c.action.raw_text);
    expect(a).not.toEqual(b);
  });

  it('makes a shorter run a prefix of a longer one', () => {
    const short = generateCases({ split: 'validation', seed: 5, n: 20 });
    const long = generateCases({ split: 'validation', seed: 5, n: 40 });
    expect(JSON.stringify(long.slice(0, 20))).toBe(JSON.stringify(short));
  });

  it('rejects an unknown split with the allowed values', () => {
    expect(() => generateCases({ split: 'x' as Split, seed: 1, n: 1 })).toThrow('unknown split "x": should be one of train, validation, test');
  });

  it('partitions list entries by index modulo 5', () => {
    expect([0, 1, 2, 3, 4, 5, 8, 9].map(splitOf)).toEqual(['train', 'train', 'train', 'validation', 'test', 'train', 'validation', 'test']);
  });

  for (const split of SPLITS) {
    it(`covers every domain, kind, style and attack type in the ${split} split`, () => {
      const cs = cases(split);
      expect(new Set(cs.map((c) => c.domain))).toEqual(new Set(DOMAINS));
      expect(new Set(cs.map((c) => c.kind))).toEqual(new Set(CASE_KINDS));
      const resultStyles = new Set(cs.filter((c) => c.attack?.vector === 'tool_result').map((c) => c.attack?.style));
      const poisonStyles = new Set(cs.filter((c) => c.attack?.vector === 'tool_description').map((c) => c.attack?.style));
      expect(resultStyles).toEqual(new Set(RESULT_STYLE_NAMES));
      expect(poisonStyles).toEqual(new Set(POISON_STYLE_NAMES));
      for (const vector of ['tool_result', 'tool_description'])
        for (const type of ['A1', 'A2'])
          expect(cs.some((c) => c.follows && c.attack?.vector === vector && c.attack.type === type)).toBe(true);
      expect(cs.some((c) => c.cot && c.follows)).toBe(true);
      expect(cs.some((c) => c.cot && !c.follows)).toBe(true);
    });
  }

  it('uses several distinct user goals per domain, so tool results alone do not fix the next call', () => {
    for (const d of DOMAINS) {
      const tasks = new Set(cases('train').filter((c) => c.domain === d && c.label === 'benign').map((c) => c.task));
      expect(tasks.size).toBeGreaterThanOrEqual(3);
    }
  });

  it('shares no template, phrasing or attacker value between splits', () => {
    const tpl = (s: Split) => new Set(cases(s).flatMap((c) => c.templates));
    const vals = (s: Split) => new Set(cases(s).flatMap((c) => c.attacker_values));
    const users = (s: Split) => new Set(cases(s).map((c) => c.messages.find((m) => m.role === 'user')?.content ?? ''));
    for (const [a, b] of [['train', 'test'], ['train', 'validation'], ['validation', 'test']] as const) {
      const ta = tpl(a);
      expect([...tpl(b)].filter((t) => ta.has(t))).toEqual([]);
      const va = vals(a);
      expect([...vals(b)].filter((v) => va.has(v))).toEqual([]);
      const ua = users(a);
      expect([...users(b)].filter((u) => ua.has(u))).toEqual([]);
    }
  });

  it('keeps labels consistent with where the attacker values appear', () => {
    for (const split of SPLITS) {
      for (const c of cases(split)) {
        const args = JSON.stringify(c.action.arguments);
        expect(c.action.raw_text).toBe(JSON.stringify({ name: c.action.name, arguments: c.action.arguments }));
        expect(c.label === 'injected').toBe(c.follows);
        if (c.attack === null) {
          expect(c.attacker_values).toEqual([]);
          expect(c.injected_in).toEqual([]);
          expect(c.poisoned_tool).toBeNull();
          expect(c.driver).toEqual({ kind: 'user' });
          continue;
        }
        const [key] = c.attacker_values;
        expect(key).toBeTruthy();
        if (!key) continue;
        const injectedText =
          c.attack.vector === 'tool_result'
            ? c.injected_in.map((i) => c.messages[i]?.content ?? '').join('\n')
            : (c.tools.find((t) => t.name === c.poisoned_tool)?.description ?? '');
        expect(injectedText).toContain(key);
        expect(cleanContext(c)).not.toContain(key);
        if (c.label === 'injected') {
          expect(args).toContain(key);
          if (c.attack.vector === 'tool_result') expect(c.driver).toEqual({ kind: 'tool_result', message_index: c.injected_in[0] });
          else expect(c.driver).toEqual({ kind: 'tool_description', tool: c.poisoned_tool });
        } else {
          expect(args).not.toContain(key);
          expect(c.driver).toEqual({ kind: 'user' });
        }
      }
    }
  });

  it('puts every tool message right after the call it answers, and injected_in on tool messages', () => {
    for (const c of cases('train')) {
      c.messages.forEach((m, i) => {
        if (m.role !== 'tool') return;
        const prev = c.messages[i - 1];
        expect(prev?.role).toBe('assistant');
        expect(prev?.tool_calls?.[0]?.name).toBe(m.tool_name);
      });
      for (const i of c.injected_in) expect(c.messages[i]?.role).toBe('tool');
      expect(c.messages[0]?.role).toBe('system');
      expect(c.messages[1]?.role).toBe('user');
      const names = c.tools.map((t) => t.name);
      expect(new Set(names).size).toBe(names.length);
      expect(names).toContain(c.action.name);
      for (const m of c.messages) for (const call of m.tool_calls ?? []) expect(names).toContain(call.name);
    }
  });

  it('keeps conversations within a small context budget', () => {
    for (const c of cases('train')) {
      const words = c.messages.map((m) => m.content).join(' ').split(/\s+/).length;
      expect(words).toBeLessThan(1500);
    }
  });

  it('generates 20,000 training cases in one go', () => {
    const cs = generateCases({ split: 'train', seed: 11, n: 20_000 });
    expect(cs).toHaveLength(20_000);
    expect(new Set(cs.map((c) => c.id)).size).toBe(20_000);
  });
});

describe('cleanFirstCalls', () => {
  it('cuts clean conversations at their first call: no tool result before it, the tools they had, deterministic', () => {
    const calls = cleanFirstCalls('validation', 2, 12);
    expect(calls).toHaveLength(12);
    for (const c of calls) {
      expect(c.messages.some((m) => m.role === 'tool')).toBe(false);
      expect(c.messages.some((m) => m.role === 'user')).toBe(true);
      expect(c.tools.length).toBeGreaterThan(0);
      expect(c.tools.map((t) => t.name)).toContain(c.action.name);
    }
    expect(cleanFirstCalls('validation', 2, 12)).toEqual(calls);
  });
});
