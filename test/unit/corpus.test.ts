/**
 * The broad training and held-out cases (model/corpus.py): held-out tool domains and phrasing families never
 * reach training, attacks sit where the case says, and labels follow what the agent did. The checks are
 * Python's own unittest (standard library only, on ../shared/datasets); this runs them in the suite.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');

describe.skipIf(!HAS_PYTHON)('broad cases from real tool data (model/corpus.py)', () => {
  it('keeps held-out domains and phrasings out of training and labels what the agent did', () => {
    const run = spawnSync('python3', ['model/test_corpus.py'], { encoding: 'utf8', timeout: 120_000 });
    expect(run.stderr).toMatch(/Ran 13 tests/);
    expect(run.stderr).not.toMatch(/skipped/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  });
});
