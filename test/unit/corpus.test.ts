/**
 * The broad training and held-out cases (model/corpus.py): held-out tool domains and phrasing families never
 * reach training, attacks sit where the case says, and labels follow what the agent did. The checks are
 * Python's own unittest (standard library only, on ../shared/datasets); this runs them in the suite.
 */
import { describe, it } from 'vitest';
import { expectPythonTestsPass, HAS_PYTHON } from '../python-unittest.js';

describe.skipIf(!HAS_PYTHON)('broad cases from real tool data (model/corpus.py)', () => {
  it('keeps held-out domains and phrasings out of training and labels what the agent did', () => {
    expectPythonTestsPass('model/test_corpus.py', 13, 120_000);
  });
});
