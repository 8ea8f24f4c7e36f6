/**
 * The training-side value scrambling (model/scramble.py) that taught the embedded model to copy: which
 * call arguments count as copied identifiers, and that a conversation is redrawn consistently. The checks
 * are Python's own unittest (standard library only); this runs them in the suite.
 */
import { describe, it } from 'vitest';
import { expectPythonTestsPass, HAS_PYTHON } from '../python-unittest.js';

describe.skipIf(!HAS_PYTHON)('scrambled training values (model/scramble.py)', () => {
  it('redraws every copied identifier consistently and leaves words, numbers, keys and tool names alone', () => {
    expectPythonTestsPass('model/test_scramble.py', 7);
  });
});
