/**
 * What a new user sees first: the README's seed cases, the demo opening on "travel / injection" (seed 1)
 * with its benign twin, the extension's two pages (src/eval/acceptance.ts). The shipped model must give
 * each its verdict; a retrained model that does not is a regression, whatever its aggregate numbers
 * (`npx tsx lab/eval/acceptance.ts --model <dir>` checks a candidate before it is shipped).
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeGuard } from '../../src/node.js';
import { embeddedModelDir } from '../../src/engine/files-node.js';
import { DEMO_SEED, runAcceptance } from '../../src/eval/acceptance.js';
import { findCase, guardInputOf } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';

const MODEL_TIMEOUT_MS = 120_000;

describe.skipIf(!requirement(existsSync(embeddedModelDir()), 'the embedded model'))("the demo's default cases on the embedded model", () => {
  const guard = createNodeGuard({ backends: ['node'] });
  afterAll(() => guard.dispose());

  it(
    'blocks travel / injection at the injected tool result and allows travel / benign',
    async () => {
      const attack = findCase('travel', 'injection', DEMO_SEED)!;
      const clean = findCase('travel', 'benign', DEMO_SEED)!;
      expect(attack.label).toBe('injected');
      expect(clean.label).toBe('benign');
      const blocked = await guard.check(guardInputOf(attack));
      expect(blocked).toMatchObject({ reason: 'model', decision: 'block', detected: true });
      expect(blocked.flagged.map((f) => f.messageIndex)).toEqual(attack.injected_in);
      const allowed = await guard.check(guardInputOf(clean));
      expect(allowed).toMatchObject({ reason: 'model', decision: 'allow', detected: false });
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    "names only the injected part in the demo's injection, tool-poisoning and reasoning scenarios",
    async () => {
      for (const variant of ['injection', 'poisoning', 'cot'] as const) {
        const c = findCase('travel', variant, DEMO_SEED)!;
        const v = await guard.check(guardInputOf(c));
        const tools = v.toolPoisoning?.leaveOneOut?.tools ?? [];
        expect({ variant, decision: v.decision, messages: v.flagged.map((f) => f.messageIndex), tools: tools.filter((t) => t.flagged).map((t) => t.tool) }).toEqual({
          variant,
          decision: 'block',
          messages: c.injected_in,
          tools: c.poisoned_tool ? [c.poisoned_tool] : [],
        });
      }
      // What the relative floor keeps out: at 0 the rule names clean descriptions beside the injected result.
      const everyFlag = createNodeGuard({ backends: ['node'], relativeFloor: 0 });
      try {
        const v = await everyFlag.check(guardInputOf(findCase('travel', 'injection', DEMO_SEED)!));
        expect(v.toolPoisoning?.leaveOneOut?.tools.filter((t) => t.flagged).length).toBeGreaterThan(0);
      } finally {
        await everyFlag.dispose();
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    "passes the product's seven acceptance cases: the README's seed cases, the demo's pair, the extension's pages",
    async () => {
      const results = await runAcceptance((input) => guard.check(input));
      expect(results.map((r) => r.id)).toEqual([
        'seed-travel-injection', 'seed-travel-benign', 'seed-travel-multi-turn-cot',
        'demo-travel-injection', 'demo-travel-benign', 'extension/injected.html', 'extension/clean.html',
      ]);
      expect(results.filter((r) => !r.passed)).toEqual([]);
      expect(results.map((r) => r.decision)).toEqual(['block', 'allow', 'block', 'block', 'allow', 'block', 'allow']);
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    "gives the same verdict and deltas with scoring 'naive' (the GPU plan: fewest passes) as with the default prefix path",
    async () => {
      const naive = createNodeGuard({ backends: ['node'], scoring: 'naive', maxBatchTokens: 1 << 16 });
      try {
        const attack = guardInputOf(findCase('travel', 'injection', DEMO_SEED)!);
        const [a, b] = [await guard.check(attack), await naive.check(attack)];
        // On a CPU 'auto' (the default) is the prefix path; the status says which plan runs.
        expect((await guard.status()).scoring).toBe('prefix');
        expect((await naive.status()).scoring).toBe('naive');
        expect(b.decision).toBe(a.decision);
        expect(b.flagged).toEqual(a.flagged);
        expect(Math.abs(b.attribution!.user.normalizedDelta - a.attribution!.user.normalizedDelta)).toBeLessThan(1e-4);
        b.attribution!.spans.forEach((s, i) => expect(Math.abs(s.normalizedDelta - a.attribution!.spans[i]!.normalizedDelta)).toBeLessThan(1e-4));
      } finally {
        await naive.dispose();
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it('refuses a scoring plan or batch size it cannot run, naming what is allowed', () => {
    for (const [options, message] of [
      [{ scoring: 'fast' }, /Invalid option scoring: received "fast"; allowed: "auto" \| "prefix" \| "naive"/],
      [{ maxBatchTokens: 0 }, /Invalid option maxBatchTokens: received 0; allowed: an integer >= 1/],
    ] as const) {
      // Refused when the guard is made, before any model loads.
      expect(() => createNodeGuard({ backends: ['node'], ...(options as object) })).toThrow(message);
    }
  }, MODEL_TIMEOUT_MS);

  it('names the domain and pick that do not exist', () => {
    expect(() => findCase('cooking', 'injection', DEMO_SEED)).toThrow(/unknown domain "cooking"/);
    expect(() => findCase('travel', 'phishing' as never, DEMO_SEED)).toThrow(/unknown pick "phishing"/);
  });
});
