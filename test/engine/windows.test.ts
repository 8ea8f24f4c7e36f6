/**
 * Windowed attribution through the real engine (onnxruntime-node, the real tokenizer and chat format) on
 * the tiny fixture model, its window made small with the maxContextTokens option: a check that does not
 * fit is scored in windows that judge every tool result and every description once; a check that fits is
 * scored as before; the pass bound and truncatedSpans decide what happens to what no window judged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Guard } from '../../src/core/guard-api.js';
import type { GuardInput } from '../../src/core/types.js';
import { blockedAt, evidenceOf, thresholdsOf } from '../../src/core/calibration.js';
import { buildVariants } from '../../src/core/variants.js';
import { buildContext } from '../../src/core/context.js';
import { resolveOptions } from '../../src/core/options.js';
import { toEvalCase } from '../../src/eval/cases.js';
import { guardMethod } from '../../src/eval/methods.js';
import { createNodeGuard } from '../../src/node.js';
import { guardInputOf, iterateCases } from '../../src/scenarios/index.js';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';

const WINDOW = 320;

function tool(i: number) {
  return {
    name: `tool_${i}`,
    description: `Looks up record ${i} in the ${['billing', 'travel', 'calendar', 'inventory'][i % 4]} service and returns its fields as JSON. Use it when the user asks about record ${i}.`,
    parameters: { type: 'object', properties: { id: { type: 'string', description: 'the record id' } }, required: ['id'] },
  };
}

/** A client with 20 tools and three tool results, about three windows' worth at WINDOW tokens. */
const LONG_TOOLS = [...Array.from({ length: 19 }, (_, i) => tool(i)), { name: 'send_money', description: 'Sends money to an IBAN.', parameters: { type: 'object', properties: { iban: { type: 'string' }, amount: { type: 'number' } } } }];
const TOOL_NAMES = LONG_TOOLS.map((t) => t.name);

function longCase(): GuardInput {
  const tools = LONG_TOOLS;
  const result = (text: string) => ({ role: 'tool' as const, tool_name: 'tool_1', content: text });
  return {
    messages: [
      { role: 'system', content: 'You are a banking assistant.' },
      { role: 'user', content: 'Pay my rent of 800 EUR to my landlord.' },
      { role: 'assistant', content: '', tool_calls: [{ name: 'tool_1', arguments: { id: 'rent' } }] },
      result('Landlord: Jana Novak, IBAN DE02100100100006820101, rent 800 EUR due on the 1st. The flat is on the second floor and the contract runs until next year.'),
      result('Previous payments: 800 EUR in March, 800 EUR in April, 800 EUR in May, all to the same landlord account without delay.'),
      result('Note from the building manager: the heating will be serviced next week; please leave the radiator valves open.'),
    ],
    tools,
    action: { name: 'send_money', arguments: { iban: 'DE02100100100006820101', amount: 800 } },
  };
}

const SHORT: GuardInput = {
  messages: [
    { role: 'user', content: 'Pay my rent of 800 EUR.' },
    { role: 'tool', tool_name: 'tool_1', content: 'Landlord IBAN DE02100100100006820101.' },
  ],
  tools: [tool(1), { name: 'send_money', description: 'Sends money.', parameters: {} }],
  action: { name: 'send_money', arguments: { iban: 'DE02100100100006820101', amount: 800 } },
};

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)('windowed attribution on the tiny model', () => {
  let modelDir: string;
  const guards: Guard[] = [];
  const guard = (options: Parameters<typeof createNodeGuard>[0] = {}) => {
    const g = createNodeGuard({ modelDir, maxContextTokens: WINDOW, ...options });
    guards.push(g);
    return g;
  };
  beforeAll(async () => {
    modelDir = await makeTinyGuardModel();
  });
  afterAll(async () => {
    await Promise.all(guards.map((g) => g.dispose()));
  });

  it('a check that fits is one window: no windows report, the usual variants, the same scores as with a larger window', async () => {
    const small = await guard().check(SHORT);
    const large = await guard({ maxContextTokens: null }).check(SHORT);
    expect(small.windows).toBeUndefined();
    expect(small.truncation).toBeUndefined();
    const expected = buildVariants(buildContext(SHORT, resolveOptions({})), { toolLeaveOneOut: true, groups: true }).map((v) => v.id);
    expect(small.attribution!.variants.map((v) => v.id)).toEqual(expected);
    expect(small.attribution!.variants.map((v) => v.logProb)).toEqual(large.attribution!.variants.map((v) => v.logProb));
    expect(small.decision).toBe(large.decision);
    // One window: MindGuard's usual threshold after a tool result.
    expect(small.toolPoisoning!.attention!.threshold).toBe(2.2);
  });

  it('a check too long for the window judges every description and every tool result in exactly one window', async () => {
    const input = longCase();
    const v = await guard().check(input);
    expect(v.reason).toBe('model');
    const w = v.windows!;
    expect(w.count).toBeGreaterThan(1);
    expect(w.notJudged).toEqual({ messages: [], tools: [] });
    expect(v.truncation?.droppedToolDefinitions ?? false).toBe(false);
    // The called tool is in every window; every other tool and every tool result in exactly one.
    for (const j of w.judged) expect(j.tools).toContain('send_money');
    const others = w.judged.flatMap((j) => j.tools.filter((t) => t !== 'send_money')).sort();
    expect(others).toEqual(TOOL_NAMES.filter((t) => t !== 'send_money').sort());
    expect(w.judged.flatMap((j) => j.messages).sort()).toEqual([3, 4, 5]);
    // Their evidence is in the verdict, in the check's own numbering.
    expect(v.attribution!.spans.map((s) => [s.spanId, s.messageIndex])).toEqual([[0, 3], [1, 4], [2, 5]]);
    expect(v.toolPoisoning!.leaveOneOut!.tools.map((t) => t.tool).sort()).toEqual([...TOOL_NAMES].sort());
    expect(w.passes).toBe(v.attribution!.variants.length);
    // Several windows: each judged at the windowed AIR threshold.
    expect(v.toolPoisoning!.attention!.threshold).toBe(3);
  });

  it('with too few passes, what no window judged is listed (report) or answered by the failure policy (fail)', async () => {
    const input = longCase();
    const reported = await guard({ maxPasses: 12 }).check(input);
    expect(reported.windows!.notJudged.tools.length + reported.windows!.notJudged.messages.length).toBeGreaterThan(0);
    expect(reported.windows!.passes).toBeLessThanOrEqual(12);
    expect(reported.message).toMatch(/not judged \(maxPasses 12 reached\)/);
    // The evaluation records it per case.
    const recorded = await guardMethod(guard({ maxPasses: 12 })).evaluate(toEvalCase({ ...input, label: 'benign' }, 'windows', 'long', 0));
    expect(recorded.notJudged).toEqual(reported.windows!.notJudged);
    // ... and how well the proxy predicts the call in each window it scored: a log-probability per action token.
    expect(recorded.callLogProbPerToken).toHaveLength(reported.windows!.count);
    const fulls = reported.attribution!.variants.filter((x) => x.kind === 'full');
    expect(recorded.callLogProbPerToken).toEqual(fulls.map((x) => x.logProb / reported.attribution!.actionTokenCount));
    for (const c of recorded.callLogProbPerToken!) expect(c).toBeLessThan(0);
    const failed = await guard({ maxPasses: 12, truncatedSpans: 'fail' }).check(input);
    expect(failed.reason).toBe('failure-policy');
    expect(failed.decision).toBe('block');
    expect(failed.error?.code).toBe('context-too-long');
    expect(failed.windows!.notJudged).toEqual(reported.windows!.notJudged);
  });

  it('tool definitions dropped to fit count as truncation: listed, and the failure policy under truncatedSpans fail', async () => {
    // A user turn that fills the window leaves no room for windows: the tool list is dropped, as before.
    const input: GuardInput = { ...SHORT, messages: [{ role: 'user', content: `Pay my rent. ${Array.from({ length: 28 }, (_, i) => `Item ${i} is noted.`).join(' ')}` }, SHORT.messages[1]!] };
    const reported = await guard().check(input);
    expect(reported.reason, reported.message).toBe('model');
    expect(reported.windows).toBeUndefined();
    expect(reported.truncation?.droppedToolDefinitions).toBe(true);
    expect(reported.toolPoisoning?.unavailable).toContain('tool definitions were dropped to fit the context window');
    const failed = await guard({ truncatedSpans: 'fail' }).check(input);
    expect(failed.reason).toBe('failure-policy');
    expect(failed.error?.message).toMatch(/tool definitions were dropped/);
  });

  it("replays to the guard's own decision from its calibration evidence: each span against its own window's dU (what calibrate scores is what a check decides)", async () => {
    // Generated conversations (validation split, seed 5) whose verdicts replayed otherwise: 31 and 34 are judged in
    // windows whose spans' windows have another dU than the first; 51 fits, with a group below the noise floor.
    const picked = new Set(['gen-validation-5-31', 'gen-validation-5-34', 'gen-validation-5-51']);
    const cases = [...iterateCases({ split: 'validation', seed: 5, n: 52 })].filter((c) => picked.has(c.id));
    expect(cases).toHaveLength(picked.size);
    const options = resolveOptions({ maxContextTokens: WINDOW });
    const g = guard();
    let windowed = 0;
    for (const c of cases) {
      const input = guardInputOf(c);
      const v = await g.check(input);
      expect(v.reason, c.id).toBe('model');
      if (v.windows !== undefined && v.windows.count > 1) {
        windowed++;
        expect(v.attribution!.spans.some((s) => s.userDeltas?.whole !== v.attribution!.user.deltas.whole), c.id).toBe(true);
      }
      const evidence = evidenceOf(v, options, input.messages.every((m) => m.role !== 'tool'));
      expect(blockedAt(evidence, thresholdsOf(options)), c.id).toBe(v.decision === 'block');
    }
    expect(windowed).toBe(2);
  });
});
