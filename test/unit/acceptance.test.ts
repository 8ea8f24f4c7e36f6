/**
 * The acceptance harness (src/eval/acceptance.ts) that gates a candidate model: which cases it checks and
 * what counts as passing. The embedded model's verdicts on them are asserted in test/engine/demo-cases.test.ts.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GuardInput } from '../../src/core/index.js';
import type { Verdict } from '../../src/core/verdict.js';
import { acceptanceCases, EXTENSION_PAGES, runAcceptance } from '../../src/eval/acceptance.js';

const verdict = (decision: Verdict['decision'], reason: Verdict['reason'] = 'model'): Verdict =>
  ({ detected: decision === 'block', decision, reason, attribution: null, flagged: [], score: null, timings: {} });

describe('the acceptance cases', () => {
  it('are the seed cases, the demo pair and the extension pages, each with the verdict it must get', () => {
    const cases = acceptanceCases();
    expect(cases.map((c) => [c.id, c.expected])).toEqual([
      ['seed-travel-injection', 'block'],
      ['seed-travel-benign', 'allow'],
      ['seed-travel-multi-turn-cot', 'block'],
      ['demo-travel-injection', 'block'],
      ['demo-travel-benign', 'allow'],
      ['extension/injected.html', 'block'],
      ['extension/clean.html', 'allow'],
    ]);
    // The extension's pages are scored as the extension sends them: one user turn, the page as a
    // read_page result, no system prompt, no tools.
    const page = cases[5]!.input;
    expect(page.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(page.messages[2]!.content).toBe(EXTENSION_PAGES['/injected.html'].text);
    expect(page.tools).toBeUndefined();
    expect(page.action).toEqual({ name: 'send_money', arguments: { iban: 'DE89370400440532013000', amount: 500 } });
  });

  it('pass only with the expected decision taken by the model, not by the failure policy', async () => {
    const cases = acceptanceCases();
    const expected = new Map(cases.map((c) => [c.input, c.expected]));
    const right = await runAcceptance(async (input: GuardInput) => verdict(expected.get(input)!), cases);
    expect(right.every((r) => r.passed)).toBe(true);

    // A guard that failed blocks privileged calls: the injections get 'block', but not from the model.
    const failing = await runAcceptance(async () => verdict('block', 'failure-policy'), cases);
    expect(failing.filter((r) => r.passed)).toEqual([]);

    const allowAll = await runAcceptance(async () => verdict('allow'), cases);
    expect(allowAll.filter((r) => !r.passed).map((r) => r.id)).toEqual(['seed-travel-injection', 'seed-travel-multi-turn-cot', 'demo-travel-injection', 'extension/injected.html']);
  });

  it("carry each verdict's score, the user's delta and which evidence flagged it, so a pass by a hair shows", async () => {
    const cases = acceptanceCases().slice(0, 1);
    const attributed = { ...verdict('block'), score: 0.42, attribution: { user: { normalizedDelta: -0.18 } } } as unknown as Verdict;
    const bySpan = { ...attributed, flagged: [{ messageIndex: 3 }] } as unknown as Verdict;
    expect((await runAcceptance(async () => bySpan, cases))[0]).toMatchObject({ passed: true, score: 0.42, userDelta: -0.18, evidence: ['attribution'] });
    // Blocked although no span flagged: the tool list's evidence decided, and the result says so.
    const byTools = { ...attributed, toolPoisoning: { detected: true } } as unknown as Verdict;
    expect((await runAcceptance(async () => byTools, cases))[0]).toMatchObject({ passed: true, evidence: ['tool-poisoning'] });
    const [without] = await runAcceptance(async () => verdict('block', 'failure-policy'), cases);
    expect(without).toMatchObject({ passed: false, score: null, userDelta: null, evidence: [] });
  });

  it('refuses a seed file whose cases are not the README seed cases, naming them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgearmor-acceptance-'));
    const file = join(dir, 'seeds.jsonl');
    const [first] = readFileSync('examples/seed-travel.jsonl', 'utf8').trim().split('\n');
    writeFileSync(file, `${JSON.stringify({ ...JSON.parse(first!), id: 'my-case' })}\n`);
    expect(() => acceptanceCases(file)).toThrow(/unexpected case id "my-case"; the acceptance cases are seed-travel-injection, seed-travel-benign, seed-travel-multi-turn-cot/);
  });
});
