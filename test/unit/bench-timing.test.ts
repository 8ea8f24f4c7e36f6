import { describe, expect, it } from 'vitest';
import { longestStall, timedInterleaved } from '../../lab/bench/cases.js';

describe('bench timing', () => {
  it('times every path the same number of times, interleaved, with the order rotating by round', async () => {
    const calls: string[] = [];
    const fn = (k: string) => async () => void calls.push(k);
    const t = await timedInterleaved(3, { a: fn('a'), b: fn('b'), c: fn('c') });
    expect(calls).toEqual(['a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b']);
    for (const k of ['a', 'b', 'c'] as const) {
      expect(t[k]).toHaveLength(3);
      t[k].forEach((ms) => expect(Number.isFinite(ms)).toBe(true));
    }
  });

  it('runs the warm-up rounds first, untimed, in the same rotation', async () => {
    const calls: string[] = [];
    const fn = (k: string) => async () => void calls.push(k);
    const t = await timedInterleaved(2, { a: fn('a'), b: fn('b') }, 1);
    expect(calls).toEqual(['a', 'b', 'b', 'a', 'a', 'b']);
    expect(t.a).toHaveLength(2);
    expect(t.b).toHaveLength(2);
  });

  it('reports the longest event-loop stall of each path: a synchronous block counts whole', async () => {
    const block = (ms: number) => async () => {
      await new Promise((resolve) => setTimeout(resolve, 12));
      const end = performance.now() + ms;
      while (performance.now() < end) {
        // a synchronous inference run, as onnxruntime-node's
      }
    };
    expect(await longestStall(block(60))).toBeGreaterThanOrEqual(60);
    const stalls: Partial<Record<'a' | 'b', number>> = {};
    await timedInterleaved(2, { a: block(40), b: async () => undefined }, 1, stalls);
    expect(stalls.a).toBeGreaterThanOrEqual(40);
    expect(Object.keys(stalls).sort()).toEqual(['a', 'b']);
  });
});
