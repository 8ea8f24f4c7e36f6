import { describe, expect, it } from 'vitest';
import { timedInterleaved } from '../../bench/cases.js';

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
});
