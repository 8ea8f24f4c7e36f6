/**
 * The training-side value scrambling (model/scramble.py) that taught the embedded model to copy: which
 * call arguments count as copied identifiers, and that a conversation is redrawn consistently. The checks
 * are Python's own unittest (standard library only); this runs them in the suite.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');

describe.skipIf(!HAS_PYTHON)('scrambled training values (model/scramble.py)', () => {
  it('redraws every copied identifier consistently and leaves words, numbers, keys and tool names alone', () => {
    const run = spawnSync('python3', ['model/test_scramble.py'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toMatch(/Ran \d+ tests/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  });
});
