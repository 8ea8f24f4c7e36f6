/**
 * The benchmark's memory measure (lab/bench/memory.ts): a peak inside synchronous work counts, although the
 * memory is given back before the work returns, which a timer sampling RSS cannot see.
 */
// vitest: isolate (the peak RSS it measures is the whole process's)
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { peakRssDelta } from '../../lab/bench/memory.js';
import { requirement } from '../requirements.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const MIB = 2 ** 20;

describe.runIf(requirement(process.platform === 'linux', 'Linux (the measure reads /proc)'))('bench memory measure', () => {
  it('counts a peak that is freed before the synchronous work returns', async () => {
    let afterFree = 0;
    const delta = await peakRssDelta(async () => {
      let block: Buffer | null = Buffer.alloc(96 * MIB, 1);
      expect(block[96 * MIB - 1]).toBe(1);
      block = null;
      gc();
      afterFree = process.memoryUsage.rss();
    });
    // The block is gone by the end (RSS fell back), yet the measured peak includes it.
    expect(afterFree).toBeLessThan(process.memoryUsage.rss() + 48 * MIB);
    expect(delta).toBeGreaterThan(80);
    expect(delta).toBeLessThan(200);
  });

  it('measures from the level before the work, not from the process start', async () => {
    const held = Buffer.alloc(64 * MIB, 1);
    const delta = await peakRssDelta(async () => undefined);
    expect(held[0]).toBe(1);
    expect(delta).toBeLessThan(16);
  });
});
