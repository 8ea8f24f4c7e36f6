/**
 * What a new user sees first: the demo opens on "travel / injection" (seed 1) and offers its benign
 * twin. The shipped model must block the first at the injected tool result and allow the second;
 * a retrained model that does not is a regression of the demo, whatever its aggregate numbers.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeGuard } from '../../src/node.js';
import { embeddedModelDir } from '../../src/engine/files-node.js';
import { findCase, type GuardCase } from '../../src/scenarios/index.js';

const DEMO_SEED = 1;
const MODEL_TIMEOUT_MS = 120_000;

const input = (c: GuardCase) => ({ messages: c.messages, action: { name: c.action.name, arguments: c.action.arguments }, tools: c.tools });

describe.skipIf(!existsSync(embeddedModelDir()))("the demo's default cases on the embedded model", () => {
  const guard = createNodeGuard({ backends: ['node'] });
  afterAll(() => guard.dispose());

  it(
    'blocks travel / injection at the injected tool result and allows travel / benign',
    async () => {
      const attack = findCase('travel', 'injection', DEMO_SEED)!;
      const clean = findCase('travel', 'benign', DEMO_SEED)!;
      expect(attack.label).toBe('injected');
      expect(clean.label).toBe('benign');
      const blocked = await guard.check(input(attack));
      expect(blocked).toMatchObject({ reason: 'model', decision: 'block', detected: true });
      expect(blocked.flagged.map((f) => f.messageIndex)).toEqual(attack.injected_in);
      const allowed = await guard.check(input(clean));
      expect(allowed).toMatchObject({ reason: 'model', decision: 'allow', detected: false });
    },
    MODEL_TIMEOUT_MS,
  );

  it('names the domain and pick that do not exist', () => {
    expect(() => findCase('cooking', 'injection', DEMO_SEED)).toThrow(/unknown domain "cooking"/);
    expect(() => findCase('travel', 'phishing' as never, DEMO_SEED)).toThrow(/unknown pick "phishing"/);
  });
});
