import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EdgeArmorError, resolveOptions, type GuardInput, type JsonValue } from '../../src/core/index.js';
import { causalArmorRule, computeAttribution, createEdgeArmorRule, type ActionTokenPart } from '../../src/core/attribution.js';
import { buildContext, type UntrustedSpan } from '../../src/core/context.js';
import { parseGuardInput } from '../../src/core/guard-input.js';
import { buildVariants } from '../../src/core/variants.js';

/** Runs per property; enough to find shape bugs while keeping `vitest run test/unit` fast. */
const NUM_RUNS = 200;
const TOOL_NAMES = ['read_file', 'get_balance', 'search_web', 'send_money'] as const;

const text = fc.string({ maxLength: 40 });
const jsonArgs: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const toolCall = fc.record({ name: fc.constantFrom(...TOOL_NAMES), arguments: jsonArgs });
const message = fc.oneof(
  fc.record({ role: fc.constantFrom('system' as const, 'user' as const), content: text }),
  fc.record({ role: fc.constant('assistant' as const), content: text, tool_calls: fc.array(toolCall, { maxLength: 2 }) }),
  fc.record({ role: fc.constant('tool' as const), content: text, tool_name: fc.constantFrom(...TOOL_NAMES) }),
);

/** Valid guard cases: any mix of messages with at least one user message, any JSON arguments, optional trust list. */
const guardCase: fc.Arbitrary<GuardInput> = fc
  .record({
    before: fc.array(message, { maxLength: 6 }),
    user: fc.record({ role: fc.constant('user' as const), content: text }),
    after: fc.array(message, { maxLength: 10 }),
    action: fc.record({ name: fc.constantFrom(...TOOL_NAMES), arguments: jsonArgs }),
    trusted: fc.option(fc.subarray([...TOOL_NAMES]), { nil: undefined }),
  })
  .map(({ before, user, after, action, trusted }) => {
    const input: GuardInput = { messages: [...before, user, ...after], action };
    if (trusted !== undefined) input.trusted_tools = trusted;
    return input;
  });

const optionsArb = fc.record({ maskCotForScoring: fc.boolean(), userRequest: fc.constantFrom('all' as const, 'last' as const) });

/** Log-probs for the action tokens of every variant of a context: one finite value <= 0 per token. */
function logProbsFor(ids: readonly string[], tokens: number) {
  return fc.tuple(...ids.map(() => fc.array(fc.double({ min: -20, max: 0, noNaN: true }), { minLength: tokens, maxLength: tokens }))).map((rows) =>
    Object.fromEntries(ids.map((id, i) => [id, rows[i] as number[]])),
  );
}

describe('core properties', () => {
  it('builds 2 + spans variants (plus one per tool with tool leave-one-out)', () => {
    fc.assert(
      fc.property(guardCase, optionsArb, (input, opts) => {
        const context = buildContext(parseGuardInput(input), resolveOptions(opts));
        expect(buildVariants(context)).toHaveLength(2 + context.spans.length);
        expect(buildVariants(context, { toolLeaveOneOut: true })).toHaveLength(2 + context.spans.length + context.tools.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('is deterministic: the same case gives deep-equal contexts, variants and attributions', () => {
    fc.assert(
      fc.property(guardCase, optionsArb, fc.integer({ min: 1, max: 6 }), fc.integer(), (input, opts, tokens, seed) => {
        const options = resolveOptions(opts);
        const a = buildContext(parseGuardInput(input), options);
        const b = buildContext(parseGuardInput(structuredClone(input)), options);
        expect(b).toEqual(a);
        const variants = buildVariants(a);
        expect(buildVariants(b)).toEqual(variants);
        const logProbs = fc.sample(logProbsFor(variants.map((v) => v.id), tokens), { numRuns: 1, seed })[0]!;
        const attribute = () => computeAttribution({ spans: a.spans, variants, logProbs }, { tau: 0, rule: causalArmorRule, ruleName: 'causalarmor' });
        expect(attribute()).toEqual(attribute());
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('masks only assistant text after the first untrusted span, keeps tool calls, and never touches other messages', () => {
    fc.assert(
      fc.property(guardCase, text, (input, redaction) => {
        const parsed = parseGuardInput(input);
        const context = buildContext(parsed, resolveOptions({ maskCotForScoring: true, cotRedactionText: redaction.trim().length > 0 ? redaction : '[r]' }));
        const first = context.spans[0]?.messageIndex ?? Number.POSITIVE_INFINITY;
        parsed.messages.forEach((original, i) => {
          const scored = context.messages[i]!;
          if (original.role !== 'assistant' || i < first) expect(scored).toEqual(original);
          else expect(scored.tool_calls).toEqual(original.tool_calls);
          if (context.maskedIndices.includes(i)) expect(original.role === 'assistant' && i > first).toBe(true);
        });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('normalises every delta by the number of scored action tokens, whatever that number is', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 40 }), fc.integer(), (spanCount, tokens, seed) => {
        const spans: UntrustedSpan[] = Array.from({ length: spanCount }, (_, i) => ({ id: i, messageIndex: i + 1, toolName: 'read_file' }));
        const variants = buildVariants({ messages: [], userIndices: [0], spans, tools: [] });
        const logProbs = fc.sample(logProbsFor(variants.map((v) => v.id), tokens), { numRuns: 1, seed })[0]!;
        const result = computeAttribution({ spans, variants, logProbs }, { tau: 0, rule: causalArmorRule, ruleName: 'causalarmor' });
        expect(result.actionTokenCount).toBe(tokens);
        for (const v of result.variants) expect(v.normalizedDelta).toBe(v.rawDelta / tokens);
        for (const s of result.spans) expect(s.normalizedDelta).toBe(s.rawDelta / tokens);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('gives the same flagged spans and detection whatever order the spans and their log-probs are supplied in', () => {
    const parts = fc.array(fc.constantFrom<ActionTokenPart>('name', 'arguments', 'other'), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), parts, fc.integer(), fc.integer(), fc.boolean(), (spanCount, labels, seed, shuffleSeed, edgearmor) => {
        const tokens = labels.length;
        const spans: UntrustedSpan[] = Array.from({ length: spanCount }, (_, i) => ({ id: i, messageIndex: 2 * i + 1, toolName: TOOL_NAMES[i % TOOL_NAMES.length]! }));
        const variants = buildVariants({ messages: [], userIndices: [0], spans, tools: [] });
        const logProbs = fc.sample(logProbsFor(variants.map((v) => v.id), tokens), { numRuns: 1, seed })[0]!;
        const rule = edgearmor ? createEdgeArmorRule(resolveOptions({ rule: 'edgearmor' }).edgearmorRule) : causalArmorRule;
        const base = computeAttribution({ spans, variants, logProbs, parts: labels }, { tau: 0, rule, ruleName: 'r' });

        // Permute the spans and relabel their ids consistently (span k becomes id perm[k]), supplying log-probs in shuffled key order.
        const perm = fc.sample(fc.shuffledSubarray([...spans.keys()], { minLength: spanCount, maxLength: spanCount }), { numRuns: 1, seed: shuffleSeed })[0]!;
        const relabelled = spans.map((s, k) => ({ ...s, id: perm[k]! })).sort((a, b) => perm.indexOf(a.id) - perm.indexOf(b.id)).reverse();
        const permutedLogProbs: Record<string, number[]> = {};
        const entries = Object.entries(logProbs).map(([id, values]): [string, number[]] => {
          const m = /^no-span:(\d+)$/.exec(id);
          return [m === null ? id : `no-span:${perm[Number(m[1])]!}`, values];
        });
        for (const [id, values] of entries.reverse()) permutedLogProbs[id] = values;
        const permutedVariants = buildVariants({ messages: [], userIndices: [0], spans: relabelled, tools: [] });
        const other = computeAttribution({ spans: relabelled, variants: permutedVariants, logProbs: permutedLogProbs, parts: labels }, { tau: 0, rule, ruleName: 'r' });

        const flaggedMessages = (r: typeof base) => r.flagged.map((f) => f.messageIndex).sort((a, b) => a - b);
        expect(flaggedMessages(other)).toEqual(flaggedMessages(base));
        expect(other.detected).toBe(base.detected);
        expect(other.score).toBe(base.score);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('throws nothing but EdgeArmorError for any JSON value, any JS value, or a mutated valid case', () => {
    const options = resolveOptions();
    const run = (value: unknown): void => {
      try {
        const context = buildContext(parseGuardInput(value), options);
        buildVariants(context, { toolLeaveOneOut: true });
      } catch (error) {
        if (!(error instanceof EdgeArmorError)) throw error;
      }
    };
    const mutated = fc.tuple(guardCase, fc.array(fc.tuple(fc.nat(), fc.constantFrom('delete', 'replace')), { minLength: 1, maxLength: 3 }), fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withTypedArray: true, withSparseArray: true, withBoxedValues: true, withObjectString: true }))
      .map(([input, edits, junk]) => {
        const value = structuredClone(input) as unknown as Record<string, unknown>;
        for (const [at, op] of edits) {
          // Walk to a random object or array inside the case and break one of its fields.
          const holders: Array<Record<string, unknown>> = [];
          // An edit can make the junk contain itself, so the walk keeps a visited set (the guard must then report the cycle).
          const seen = new Set<unknown>();
          const visit = (v: unknown): void => {
            if (v !== null && typeof v === 'object' && !seen.has(v)) {
              seen.add(v);
              holders.push(v as Record<string, unknown>);
              Object.values(v).forEach(visit);
            }
          };
          visit(value);
          const holder = holders[at % holders.length]!;
          const keys = Object.keys(holder);
          const key = keys.length === 0 ? 'x' : keys[at % keys.length]!;
          // Frozen or boxed holders (a String object) refuse edits; such an edit is simply skipped.
          try {
            if (op === 'delete') delete holder[key];
            else holder[key] = junk;
          } catch {
            continue;
          }
        }
        return value;
      });
    fc.assert(fc.property(fc.jsonValue(), run), { numRuns: NUM_RUNS });
    fc.assert(fc.property(fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withSparseArray: true }), run), { numRuns: NUM_RUNS });
    fc.assert(fc.property(mutated, run), { numRuns: NUM_RUNS * 2 });
  });
});
