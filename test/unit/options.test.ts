import { describe, expect, it } from 'vitest';
import { DEFAULT_GUARD_OPTIONS, InvalidOptionsError, mergeOptions, optionsFromEnv, resolveOptions, type GuardOptions } from '../../src/core/index.js';
import { GUARD_OPTIONS } from '../../src/core/option-registry.js';
import { optionEntries } from '../../src/core/option-schema.js';

describe('resolveOptions', () => {
  it('fills every option left out with its declared default', () => {
    const o = resolveOptions();
    for (const { path, leaf } of optionEntries(GUARD_OPTIONS)) {
      const value = path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], o);
      expect(value, path.join('.')).toEqual(leaf.defaultValue);
    }
    // The security defaults the product promises (README "Security model"), not constants echoed back:
    // a failing guard blocks privileged calls, and every call and every tool result is in scope.
    expect(o).toMatchObject({ onError: 'block', privilegedTools: null, untrustedTools: null, trustedTools: null });
  });

  it('keeps the defaults object frozen', () => {
    expect(Object.isFrozen(DEFAULT_GUARD_OPTIONS)).toBe(true);
    expect(Object.isFrozen(DEFAULT_GUARD_OPTIONS.defense)).toBe(true);
  });

  it('never mutates its input and returns data that survives structuredClone', () => {
    const input: GuardOptions = { tau: 0.5, trustedTools: ['a', 'a'], defense: { maxRegenerations: 0 } };
    const snapshot = structuredClone(input);
    const resolved = resolveOptions(input);
    expect(input).toEqual(snapshot);
    expect(structuredClone(resolved)).toEqual(resolved);
    expect(resolved.trustedTools).toEqual(['a']);
    expect(resolved.defense.maxRegenerations).toBe(0);
  });

  it('rejects both untrustedTools and trustedTools at once', () => {
    expect(() => resolveOptions({ untrustedTools: ['a'], trustedTools: ['b'] })).toThrow(InvalidOptionsError);
  });

  it('rejects an empty untrustedTools list instead of silently trusting everything', () => {
    expect(() => resolveOptions({ untrustedTools: [] })).toThrow(/empty list/);
  });

  it('says what was received and what is allowed', () => {
    expect(() => resolveOptions({ rule: 'magic' as never })).toThrow('Invalid option rule: received "magic"; allowed: "causalarmor" | "edgearmor".');
    expect(() => resolveOptions({ tau: Number.NaN })).toThrow(/tau: received NaN; allowed: a finite number/);
    expect(() => resolveOptions({ userWeight: -1 })).toThrow(/userWeight: received -1; allowed: a number >= 0/);
    expect(() => resolveOptions({ userWeight: '2' as never })).toThrow(/userWeight: received "2"; allowed: a finite number/);
    expect(() => resolveOptions({ timeoutMs: -1 })).toThrow(/timeoutMs.*integer >= 1/);
    expect(() => resolveOptions({ defense: { maxRegenerations: 1.5 } })).toThrow('Invalid option defense.maxRegenerations: received 1.5; allowed: an integer >= 0.');
    expect(() => resolveOptions({ defense: [] as never })).toThrow('Invalid option defense: received array; allowed: an object.');
    expect(() => resolveOptions({ privilegedTools: ['send_money', ''] })).toThrow(/Invalid option privilegedTools: received array; allowed: an array of non-empty tool names\./);
    expect(() => resolveOptions({ maxContextTokens: 0 })).toThrow('Invalid option maxContextTokens: received 0; allowed: an integer >= 1.');
    expect(() => resolveOptions({ edgearmorRule: { nameWeight: 0, argumentsWeight: 0 } })).toThrow('Invalid option edgearmorRule: nameWeight and argumentsWeight are both 0; at least one must be > 0.');
    expect(() => resolveOptions({ toolPoisoning: { mindguard: { airThreshold: -1 } } })).toThrow('Invalid option toolPoisoning.mindguard.airThreshold: received -1; allowed: a finite number >= 0.');
    expect(() => resolveOptions('tau=1' as never)).toThrow('Invalid options: received "tau=1"; allowed: an object.');
  });

  it('fills defaults for null or absent nullable options, and keeps given ones', () => {
    expect(resolveOptions({ maxContextTokens: null, defense: { maxRedactedSentences: null } })).toMatchObject({ maxContextTokens: null, defense: { maxRedactedSentences: null } });
    expect(resolveOptions({ maxContextTokens: 512, defense: { maxRedactedSentences: 3 } })).toMatchObject({ maxContextTokens: 512, defense: { maxRedactedSentences: 3, maxRegenerations: 2 } });
    expect(resolveOptions({ toolPoisoning: { mindguard: { airThreshold: 0.5 } } }).toolPoisoning.mindguard.airThreshold).toBe(0.5);
    expect(resolveOptions().toolPoisoning.mindguard.airThreshold).toBe(2.2);
  });

  it('rejects unknown option names and lists the known ones', () => {
    expect(() => resolveOptions({ margin_tau: 1 } as never)).toThrow(/Unknown option margin_tau; known options are tau, userWeight, rule/);
    expect(() => resolveOptions({ defense: { retries: 1 } } as never)).toThrow(/Unknown option defense.retries; known options are maxRegenerations, sanitize/);
  });
});

describe('optionsFromEnv', () => {
  it('parses EDGEARMOR_* variables', () => {
    expect(
      optionsFromEnv({
        EDGEARMOR_TAU: '0.5',
        EDGEARMOR_MASK_COT_FOR_SCORING: 'false',
        EDGEARMOR_UNTRUSTED_TOOLS: 'read_file, get_webpage',
        EDGEARMOR_MAX_REGENERATIONS: '3',
        EDGEARMOR_RULE: 'edgearmor',
        EDGEARMOR_USER_WEIGHT: '1',
      }),
    ).toEqual({ tau: 0.5, maskCotForScoring: false, untrustedTools: ['read_file', 'get_webpage'], defense: { maxRegenerations: 3 }, rule: 'edgearmor', userWeight: 1 });
  });

  it('accepts the seeds CAUSAL_ARMOR_* names as aliases', () => {
    expect(optionsFromEnv({ CAUSAL_ARMOR_MASK_COT_FOR_SCORING: 'false', CAUSAL_ARMOR_MARGIN_TAU: '1', CAUSAL_ARMOR_ENABLE_SANITIZATION: '0' })).toEqual({
      maskCotForScoring: false,
      tau: 1,
      defense: { sanitize: false },
    });
  });

  it('lets an EDGEARMOR_ variable win over its CAUSAL_ARMOR_ alias', () => {
    expect(optionsFromEnv({ CAUSAL_ARMOR_TAU: '2', EDGEARMOR_TAU: '0.25' })).toEqual({ tau: 0.25 });
  });

  it('ignores unset and empty variables', () => {
    expect(optionsFromEnv({ EDGEARMOR_TAU: '', PATH: '/bin' })).toEqual({});
  });

  it('names the variable when a value does not parse', () => {
    expect(() => optionsFromEnv({ EDGEARMOR_MASK_COT_FOR_SCORING: 'maybe' })).toThrow(/EDGEARMOR_MASK_COT_FOR_SCORING: received "maybe"/);
    expect(() => optionsFromEnv({ EDGEARMOR_TAU: 'abc' })).toThrow(InvalidOptionsError);
  });
});

describe('option precedence', () => {
  it('takes flags over environment over config file over defaults, merging nested groups key by key', () => {
    // The CLI's layering (src/cli/flags.ts): flags, then the environment, then the config file.
    const resolved = resolveOptions(
      mergeOptions(
        { tau: 3 },
        optionsFromEnv({ EDGEARMOR_TAU: '2', EDGEARMOR_ON_ERROR: 'allow', EDGEARMOR_MAX_REGENERATIONS: '5' }),
        { tau: 1, onError: 'block', userRequest: 'last', defense: { sanitize: false, maxRegenerations: 1 } },
      ),
    );
    expect(resolved.tau).toBe(3);
    expect(resolved.onError).toBe('allow');
    expect(resolved.userRequest).toBe('last');
    expect(resolved.defense).toMatchObject({ sanitize: false, maxRegenerations: 5 });
    expect(resolved.maskCotForScoring).toBe(true);
  });

  it('lets a higher layer that sets one trust list replace the other list from a lower layer', () => {
    const merged = mergeOptions({ untrustedTools: ['read_file'] }, { trustedTools: ['get_balance'] });
    expect(merged).toEqual({ untrustedTools: ['read_file'] });
    expect(() => resolveOptions(merged)).not.toThrow();
  });

  it('never lets an undefined value override a lower layer', () => {
    expect(mergeOptions({ tau: undefined }, { tau: 1 })).toEqual({ tau: 1 });
  });
});
