/**
 * The options are declared once (the guard's in src/core/option-registry.ts, the runtime's in
 * core/runtime-options.ts, the factories' own in node/options.ts and page/options.ts): the
 * validators, the defaults, the types, the environment variables, the CLI flags and usage and the
 * tables of docs/options.md all come from those declarations.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { withOptionsTable } from '../../scripts/options-table.js';
import { GUARD_FLAGS, guardOptionsFrom, optionFlagsUsage, variantFlag } from '../../src/cli/flags.js';
import { createGuard } from '../../src/page/create-guard.js';
import { CLIENT_OPTIONS } from '../../src/page/options.js';
import { RUNTIME_OPTIONS, type ModelRuntimeOptions } from '../../src/core/runtime-options.js';
import { NODE_OPTIONS } from '../../src/node/options.js';
import { createNodeGuard, type NodeGuardOptions } from '../../src/node.js';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { EXTERNAL_OPTIONS, setOptionAt, type ExternalOption } from '../../src/core/option-sources.js';
import { GUARD_OPTIONS, optionEntries, optionsFromEnv, resolveOptions, type GuardOptions, type ResolvedGuardOptions } from '../../src/core/options.js';

const OPTIONS_PAGE = join(import.meta.dirname, '../../docs/options.md');

/** A valid value of the option, as text, and the value it means. */
function sample(option: ExternalOption): [string, unknown] {
  const d = option.leaf.defaultValue;
  switch (option.text) {
    case 'boolean':
      return ['off', false];
    case 'list':
      return [' a, b ', ['a', 'b']];
    case 'count-or-none':
      return ['7', 7];
    default:
      return [String(d), d];
  }
}

describe('the option registry', () => {
  it("is what docs/options.md's tables say, row for row: the guard's, the runtime's and the factories' own", () => {
    const page = readFileSync(OPTIONS_PAGE, 'utf8');
    expect(withOptionsTable(page) === page, 'docs/options.md options table drifted from the registry: run npm run docs:options').toBe(true);
    for (const declaration of [GUARD_OPTIONS, RUNTIME_OPTIONS, NODE_OPTIONS, CLIENT_OPTIONS]) {
      for (const { path } of optionEntries(declaration)) expect(page).toContain(`| \`${path.join('.')}\` |`);
    }
  });

  it('keeps the CLI\'s flags and the tables\' generator out of the shells: neither imports page, worker or Node-shell code', () => {
    for (const file of ['src/cli/flags.ts', 'src/cli/options-table.ts']) {
      const imports = [...readFileSync(join(import.meta.dirname, '../..', file), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]!);
      expect(imports.length, file).toBeGreaterThan(0);
      expect(imports.filter((i) => /\/(page|worker|wire|node)\//.test(i)), file).toEqual([]);
    }
  });

  it("checks everything a factory takes in one pass: every problem at once, the runtime's and the shell's options among them", () => {
    const error = (() => {
      try {
        createNodeGuard({ tau: 'x', scoring: 'fast', isolation: 'thread', cacheDir: 5 } as never);
      } catch (e) {
        return e;
      }
      return null;
    })() as InvalidOptionsError;
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error.details['issues'] as Array<{ path: string }>).map((i) => i.path)).toEqual(['tau', 'scoring', 'cacheDir', 'isolation']);
    expect(error.message).toMatch(/^Invalid option tau: .* Also: Invalid option scoring: received "fast"; allowed: "auto" \| "prefix" \| "naive"\. .*Invalid option isolation: received "thread"; allowed: "none" \| "process"\.$/);
    expect(() => createGuard({ worker: () => ({}) as never, stuckWorkerGraceMs: -1, heartbeatTimeoutMs: 0 })).toThrow(
      'Invalid option stuckWorkerGraceMs: received -1; allowed: a finite number of milliseconds >= 0. Also: Invalid option heartbeatTimeoutMs: received 0; allowed: a finite number of milliseconds > 0, or null to turn the heartbeat off.',
    );
    // An unknown option is named with everything that factory takes, and what only the other factory takes is unknown.
    expect(() => createNodeGuard({ heartbeatTimeoutMs: 10 } as never)).toThrow(/^Unknown option heartbeatTimeoutMs; known options are tau, .*modelVariant, .*isolation, stuckWorkerGraceMs\.$/);
    // The CLI's --variant takes what modelVariant takes.
    expect(variantFlag(undefined)).toBe(RUNTIME_OPTIONS.entries.modelVariant.defaultValue);
    expect(variantFlag('fp32')).toBe('fp32');
    expectTypeOf<NonNullable<NodeGuardOptions['isolation']>>().toEqualTypeOf<'none' | 'process'>();
    expectTypeOf<NonNullable<ModelRuntimeOptions['scoring']>>().toEqualTypeOf<'auto' | 'prefix' | 'naive'>();
  });

  it('gives every option with an external name one flag and its environment variables, which take the same text to the same value', () => {
    expect(EXTERNAL_OPTIONS.length).toBeGreaterThan(20);
    const usage = optionFlagsUsage();
    for (const option of EXTERNAL_OPTIONS) {
      expect(GUARD_FLAGS, option.flag).toHaveProperty(option.flag);
      expect(usage).toContain(`--${option.flag} <`);
      const [text, value] = sample(option);
      const expected: Record<string, unknown> = {};
      setOptionAt(expected, option.path, value);
      expect(guardOptionsFrom({ [option.flag]: text }).options, option.flag).toEqual(expected);
      for (const variable of option.envNames) expect(optionsFromEnv({ [variable]: text }), variable).toEqual(expected);
    }
  });

  it('refuses the same bad text from a flag and from the environment, naming where it came from', () => {
    for (const option of EXTERNAL_OPTIONS.filter((o) => o.text === 'number' || o.text === 'boolean')) {
      expect(() => guardOptionsFrom({ [option.flag]: 'lots' })).toThrow(`Invalid flag --${option.flag}: received "lots"`);
      expect(() => optionsFromEnv({ [option.envNames[0]!]: 'lots' })).toThrow(`Invalid environment variable ${option.envNames[0]}: received "lots"`);
    }
  });

  it('declares defaults its own schemas accept', () => {
    for (const { path, leaf } of optionEntries(GUARD_OPTIONS)) {
      if (leaf.defaultValue === null && !v.safeParse(leaf.schema, null).success) continue; // null: the option left out
      expect(v.safeParse(leaf.schema, leaf.defaultValue).success, path.join('.')).toBe(true);
    }
  });

  it('reports every problem at once, as structured issues, MindGuard\'s under their full path', () => {
    const error = (() => {
      try {
        resolveOptions({ tau: 'x', userWeight: -1, bogus: 1, untrustedTools: [], toolPoisoning: { mindguard: { sinkTopK: 1.5 } } } as never);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(InvalidOptionsError);
    const { details, message } = error as InvalidOptionsError;
    expect(details['issues']).toEqual([
      { code: 'invalid-value', path: 'tau', received: '"x"', allowed: 'a finite number' },
      { code: 'invalid-value', path: 'userWeight', received: '-1', allowed: 'a number >= 0' },
      expect.objectContaining({ code: 'invalid-value', path: 'untrustedTools', reason: expect.stringMatching(/^received an empty list/) }),
      { code: 'invalid-value', path: 'toolPoisoning.mindguard.sinkTopK', received: '1.5', allowed: 'an integer >= 0 (0 disables the sink filter)' },
      expect.objectContaining({ code: 'unknown-option', path: 'bogus', received: 'bogus' }),
    ]);
    // The first problem keeps its place in details and at the start of the message; the others follow it.
    expect(details).toMatchObject({ option: 'tau', allowed: 'a finite number' });
    expect(message).toMatch(/^Invalid option tau: received "x"; allowed: a finite number\. Also: Invalid option userWeight: .* Unknown option bogus; /);
    expect(() => resolveOptions({ untrustedTools: ['a'], trustedTools: ['b'] })).toThrow(expect.objectContaining({ details: expect.objectContaining({ issues: [expect.objectContaining({ code: 'conflict', path: '' })] }) }));
  });

  it('infers the option types from the declaration, and hands each caller its own resolved copy', () => {
    expectTypeOf<ResolvedGuardOptions['untrustedTools']>().toEqualTypeOf<string[] | null>();
    expectTypeOf<ResolvedGuardOptions['rule']>().toEqualTypeOf<'causalarmor' | 'edgearmor'>();
    expectTypeOf<ResolvedGuardOptions['toolPoisoning']['mindguard']['headPooling']>().toEqualTypeOf<'mean' | 'max' | 'sum'>();
    expectTypeOf<NonNullable<GuardOptions['defense']>['maxRedactedSentences']>().toEqualTypeOf<number | null | undefined>();
    expect(Object.isFrozen(resolveOptions({}))).toBe(false);
  });
});
