/** nameStrongParts (core/named-parts.ts): a verdict names only the parts at least `relativeFloor` of its strongest flagged part; its decision stays. */
import { describe, expect, it } from 'vitest';
import { causalArmorRule, computeAttribution } from '../../src/core/attribution.js';
import { nameStrongParts } from '../../src/core/named-parts.js';
import { combineToolPoisoning, toolDescriptionAttribution } from '../../src/core/tool-poisoning.js';
import { modelVerdict, type Verdict } from '../../src/core/verdict.js';

/**
 * A verdict over one action token from summed log-probs per variant: two tool results (spans 0 and 1, messages
 * 3 and 5) and two descriptions (`evil`, `calm`), judged with tau 0 and the noise floor 0 as the guard does.
 */
function verdictOf(logProbs: Record<string, number>): Verdict {
  const ids = Object.keys(logProbs);
  const kind = (id: string) => (id.startsWith('no-tool:') ? 'no-tool' : id.startsWith('no-span:') ? 'no-span' : id.startsWith('no-group:') ? 'no-group' : id);
  const group = (id: string) => (id.startsWith('no-group:') ? { group: { spanIds: [0, 1], reasons: ['all-untrusted'] } } : {});
  const a = computeAttribution(
    {
      spans: [{ id: 0, messageIndex: 3, toolName: 'search' }, { id: 1, messageIndex: 5, toolName: 'read' }],
      variants: ids.map((id) => ({ id: id as never, kind: kind(id) as never, ...(id.startsWith('no-span:') ? { spanId: Number(id.slice(8)) } : {}), ...group(id) })) as never,
      logProbs: Object.fromEntries(ids.map((id) => [id, [logProbs[id]!]])),
    },
    { tau: 0, rule: causalArmorRule, ruleName: 'causalarmor', noiseFloor: 0 },
  );
  const verdict = modelVerdict(a);
  const tools = toolDescriptionAttribution(a, causalArmorRule, 0, 0);
  verdict.toolPoisoning = combineToolPoisoning(tools, null, 'book', []);
  if (verdict.toolPoisoning.detected) Object.assign(verdict, { detected: true, decision: 'block' });
  return verdict;
}

const named = (v: Verdict) => ({
  decision: v.decision,
  detected: v.detected,
  messages: v.flagged.map((f) => f.messageIndex),
  tools: v.toolPoisoning!.leaveOneOut!.tools.filter((t) => t.flagged).map((t) => t.tool),
  sourceTool: v.toolPoisoning!.sourceTool,
});

describe('nameStrongParts', () => {
  // dU -0.08: the request explains the call less than nothing, so every part that lowers it at all clears the rule.
  const injection = verdictOf({ full: -1, 'no-user': -0.92, 'no-span:0': -2.64, 'no-span:1': -1.047, 'no-tool:evil': -1.012, 'no-tool:calm': -1.001 });

  it('names the injected result alone when the other parts move the call by a hair, and keeps the block', () => {
    expect(named(injection)).toEqual({ decision: 'block', detected: true, messages: [3, 5], tools: ['evil', 'calm'], sourceTool: 'evil' });
    const out = nameStrongParts(injection, 0.1, 'book');
    expect(named(out)).toEqual({ decision: 'block', detected: true, messages: [3], tools: [], sourceTool: null });
    // The evidence stays: the unnamed parts keep their deltas and scores.
    expect(out.attribution!.spans.map((s) => [s.messageIndex, s.flagged, Number(s.normalizedDelta.toFixed(9))])).toEqual([[3, true, 1.64], [5, false, 0.047]]);
    expect(out.score).toBe(injection.score);
    expect(out.toolPoisoning!.score).toBe(injection.toolPoisoning!.score);
  });

  it('names a poisoned description alone when it drove the call, and the call stays blocked by it', () => {
    const poisoning = verdictOf({ full: -1, 'no-user': -0.88, 'no-span:0': -1.047, 'no-span:1': -0.9, 'no-tool:evil': -2.647, 'no-tool:calm': -0.99 });
    const out = nameStrongParts(poisoning, 0.1, 'book');
    expect(named(out)).toEqual({ decision: 'block', detected: true, messages: [], tools: ['evil'], sourceTool: 'evil' });
    expect(out.attribution!.detected).toBe(false);
  });

  it('names every part within the share of the strongest, and changes nothing at share 0', () => {
    const two = verdictOf({ full: -1, 'no-user': -0.9, 'no-span:0': -2, 'no-span:1': -1.5, 'no-tool:evil': -0.95, 'no-tool:calm': -0.9 });
    expect(named(nameStrongParts(two, 0.5, 'book')).messages).toEqual([3, 5]);
    expect(named(nameStrongParts(two, 0.6, 'book')).messages).toEqual([3]);
    expect(nameStrongParts(injection, 0, 'book')).toBe(injection);
  });

  it('names a group\'s members only when the group moves the call more than its members named alone', () => {
    // The demo's reasoning case: the injected result alone 1.55, the clean one 0.08 (not flagged), both 1.53.
    const beside = verdictOf({ full: -1, 'no-user': -0.83, 'no-span:0': -2.55, 'no-span:1': -1.077, 'no-group:0': -2.53, 'no-tool:evil': -1, 'no-tool:calm': -1 });
    expect(named(beside).messages).toEqual([3, 5]);
    expect(named(nameStrongParts(beside, 0.1, 'book')).messages).toEqual([3]);
    // Two copies of an injection: neither alone clears the rule, together they do, and both are named.
    const copies = verdictOf({ full: -1, 'no-user': -1.5, 'no-span:0': -1.3, 'no-span:1': -1.3, 'no-group:0': -3, 'no-tool:evil': -1, 'no-tool:calm': -1 });
    expect(copies.attribution!.spans.map((s) => s.flagged)).toEqual([false, false]);
    expect(named(nameStrongParts(copies, 0.1, 'book')).messages).toEqual([3, 5]);
  });

  it('leaves an allowed call as it is', () => {
    const allowed = verdictOf({ full: -1, 'no-user': -3, 'no-span:0': -1.2, 'no-span:1': -1.1, 'no-tool:evil': -1.1, 'no-tool:calm': -1 });
    expect(allowed.decision).toBe('allow');
    expect(nameStrongParts(allowed, 0.1, 'book')).toBe(allowed);
  });
});
