import { describe, expect, it } from 'vitest';
import { withNegativeNumbers } from '../../src/cli/flags.js';

describe('CLI flags', () => {
  it('joins a flag and the negative number after it, which parseArgs would refuse as ambiguous', () => {
    expect(withNegativeNumbers(['cases.jsonl', '--tau', '-0.2', '--json'])).toEqual(['cases.jsonl', '--tau=-0.2', '--json']);
    expect(withNegativeNumbers(['--tau', '-.5', '--user-weight', '3'])).toEqual(['--tau=-.5', '--user-weight', '3']);
  });

  it('leaves everything else alone: short flags, joined values, non-numbers, a trailing flag', () => {
    const args = ['-h', '--tau=-1', '--model', '-dir', '--json', '--tau'];
    expect(withNegativeNumbers(args)).toEqual(args);
  });
});
