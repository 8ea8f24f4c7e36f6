/**
 * truncatedSpans: what a check answers when an untrusted tool result had to be cut to fit the window.
 * 'report' (default) keeps the model's verdict and lists the cut; 'fail' answers with the failure policy.
 * The core's judge on hand-made scores (no model).
 */
import { describe, expect, it } from 'vitest';
import { resolveOptions, type GuardOptions } from '../../src/core/index.js';
import { buildContext } from '../../src/core/context.js';
import { parseGuardInput } from '../../src/core/guard-input.js';
import { judge, planCheck, type CheckScores } from '../../src/core/judge.js';
import { truncatedSpans } from '../../src/core/judge.js';

const INPUT = parseGuardInput({
  messages: [
    { role: 'user', content: 'Summarise the report and book the room it names.' },
    { role: 'assistant', content: '', tool_calls: [{ name: 'read_file', arguments: { path: 'report.txt' } }] },
    { role: 'tool', tool_name: 'read_file', content: 'A long report. Room 12 is free on Monday.' },
    { role: 'assistant', content: '', tool_calls: [{ name: 'get_rooms', arguments: {} }] },
    { role: 'tool', tool_name: 'get_rooms', content: 'Room 12, Room 14.' },
  ],
  action: { name: 'book_room', arguments: { room: '12' } },
});

function judged(options: GuardOptions, truncation: CheckScores['truncation']) {
  const resolved = resolveOptions(options);
  const context = buildContext(INPUT, resolved);
  const plan = planCheck(context, resolved);
  if (plan.verdict) throw new Error('expected a call that needs scoring');
  const capabilities = { attention: false, attentionUnavailable: 'none in this test', chatFormat: 'edgearmor' };
  const { variants, withAttention } = plan.scoring(capabilities);
  // The user drives the call: removing the request costs 2 nats a token, either result 0.1, both 0.2.
  const perToken: Record<string, number> = { full: -1, 'no-user': -3, 'no-span:0': -1.1, 'no-span:1': -1.1, 'no-group:0': -1.2 };
  const scores: CheckScores = {
    logProbs: new Map(variants.map((v) => [v.id, new Float64Array(3).fill(perToken[v.id]!)])),
    layout: { user: [{ start: 1, end: 5 }], tools: [], toolResults: [{ start: 10, end: 20 }, { start: 25, end: 30 }] },
    truncation,
  };
  return judge({ context, variants, withAttention, scores, options: resolved, capabilities });
}

const UNCUT = { droppedToolDefinitions: false, shortenedMessages: {} };
const RESULT_CUT = { droppedToolDefinitions: false, shortenedMessages: { 2: 300 } };
const CHARS_CUT = { droppedToolDefinitions: false, shortenedMessages: {}, charsCutBeforeTokenizing: { 4: 900_000 } };

describe('truncatedSpans', () => {
  it("defaults to 'report': the model's verdict stands and the cut is listed", () => {
    expect(resolveOptions().truncatedSpans).toBe('report');
    const v = judged({}, RESULT_CUT);
    expect(v).toMatchObject({ decision: 'allow', reason: 'model', truncation: { shortenedMessages: { 2: 300 } } });
  });

  it("'fail' answers a cut tool result with the failure policy, naming the messages and keeping the cut", () => {
    const v = judged({ truncatedSpans: 'fail' }, RESULT_CUT);
    expect(v).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'context-too-long' }, truncation: { shortenedMessages: { 2: 300 } } });
    expect(v.error?.message).toMatch(/messages\[2\]/);
    // onError 'allow' lets it through, still as a failure, never as a model verdict.
    expect(judged({ truncatedSpans: 'fail', onError: 'allow' }, RESULT_CUT)).toMatchObject({ decision: 'allow', reason: 'failure-policy' });
  });

  it("'fail' counts text cut before tokenizing, and leaves uncut checks and cuts outside tool results alone", () => {
    expect(judged({ truncatedSpans: 'fail' }, CHARS_CUT)).toMatchObject({ reason: 'failure-policy', error: { code: 'context-too-long' } });
    expect(judged({ truncatedSpans: 'fail' }, UNCUT)).toMatchObject({ decision: 'allow', reason: 'model' });
    // A shortened system prompt or reasoning (message 0 here is the user: never cut; 1 and 3 are calls) is not a tool result.
    expect(judged({ truncatedSpans: 'fail' }, { droppedToolDefinitions: false, shortenedMessages: { 3: 10 } })).toMatchObject({ reason: 'model' });
  });

  it("'fail' counts dropped tool definitions as truncation (never a silent drop); 'report' lists them", () => {
    const dropped = { droppedToolDefinitions: true, shortenedMessages: {} };
    const failed = judged({ truncatedSpans: 'fail' }, dropped);
    expect(failed).toMatchObject({ reason: 'failure-policy', decision: 'block', error: { code: 'context-too-long' }, truncation: { droppedToolDefinitions: true } });
    expect(failed.error?.message).toMatch(/tool definitions were dropped/);
    expect(judged({ truncatedSpans: 'report' }, dropped)).toMatchObject({ reason: 'model', truncation: { droppedToolDefinitions: true } });
  });

  it('lists the cut untrusted spans once each, in order', () => {
    const context = buildContext(INPUT, resolveOptions());
    expect(truncatedSpans(context, { shortenedMessages: { 4: 5, 2: 9, 3: 1 }, charsCutBeforeTokenizing: { 2: 100 } })).toEqual([2, 4]);
  });

  it('refuses an unknown policy, naming what is allowed', () => {
    expect(() => resolveOptions({ truncatedSpans: 'ignore' as never })).toThrow(/truncatedSpans.*"report".*"fail"/);
  });
});
