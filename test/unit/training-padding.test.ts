/**
 * The training-side padding (model/padding.py, `train.py --pad-results`): filler from GSM8K's train split that
 * none of the evaluation's padding rewrites use, padded conversations that fit the window with the result whole,
 * and ablated copies that keep the padding. The checks are Python's own unittest (standard library only); this
 * runs them in the suite.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');

describe.skipIf(!HAS_PYTHON)('padded training conversations (model/padding.py)', () => {
  it('pads one result with unseen filler up to the window and keeps everything else as it was', () => {
    const run = spawnSync('python3', ['model/test_padding.py'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toMatch(/Ran 7 tests/);
    expect(run.stderr).not.toMatch(/skipped/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  });
});
