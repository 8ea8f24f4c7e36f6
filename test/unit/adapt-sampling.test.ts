/** The order adapt draws conversations in (src/adapt/sampling.ts): across the traffic's strata, seeded, not down the file. */
import { describe, expect, it } from 'vitest';
import { conversationStrata, stratifiedOrder, stratumCounts } from '../../src/adapt/sampling.js';
import { callSites, parseConversation } from '../../src/adapt/traffic.js';

/** 100 items in file order: 60 of stratum a, then 30 of b, then 10 of c. */
const ITEMS = [...Array.from({ length: 60 }, (_, i) => `a${i}`), ...Array.from({ length: 30 }, (_, i) => `b${i}`), ...Array.from({ length: 10 }, (_, i) => `c${i}`)];
const stratum = (x: string): string => x[0]!;

describe('stratified sampling of the traffic', () => {
  it('puts every stratum at about its share into any first part of the order', () => {
    const order = stratifiedOrder(ITEMS, stratum, 7);
    expect([...order].sort()).toEqual([...ITEMS].sort());
    for (const m of [10, 20, 50]) {
      const counts = stratumCounts(ITEMS, new Set(order.slice(0, m)), stratum);
      // Systematic sampling: within one of m x share for each stratum.
      for (const row of counts) expect(Math.abs(row.reached - (m * row.conversations) / ITEMS.length), `${row.stratum} in the first ${m}`).toBeLessThanOrEqual(1);
    }
    // Down the file, the first 20 would all be stratum a.
    expect(new Set(order.slice(0, 20).map(stratum))).toEqual(new Set(['a', 'b', 'c']));
  });

  it('is fixed by the seed and changes with it', () => {
    expect(stratifiedOrder(ITEMS, stratum, 7)).toEqual(stratifiedOrder(ITEMS, stratum, 7));
    expect(stratifiedOrder(ITEMS, stratum, 8)).not.toEqual(stratifiedOrder(ITEMS, stratum, 7));
  });

  it("names a conversation's stratum by its first call's tool, and by its agent when the traffic has several tool sets", () => {
    const conv = (line: number, tools: string[], first: string) =>
      parseConversation(
        {
          messages: [
            { role: 'user', content: 'do it' },
            { role: 'assistant', content: '', tool_calls: [{ name: first, arguments: {} }] },
          ],
          tools: tools.map((name) => ({ name, description: name, parameters: {} })),
        },
        line,
      );
    const one = [conv(1, ['x', 'y'], 'x'), conv(2, ['y', 'x'], 'y')];
    expect([...conversationStrata(one, new Map(one.map((c) => [c, callSites(c)]))).values()]).toEqual(['x', 'y']);
    const two = [...one, conv(3, ['z'], 'z')];
    expect([...conversationStrata(two, new Map(two.map((c) => [c, callSites(c)]))).values()]).toEqual(['agent-1/x', 'agent-1/y', 'agent-2/z']);
  });
});
