/**
 * The training-side value scrambling (model/scramble.py) that taught the embedded model to copy: which
 * call arguments count as copied identifiers, that a conversation is redrawn consistently, and that its tool names
 * (the experimental --scramble-names) are redrawn wherever they are mentioned. The checks
 * are Python's own unittest (standard library only); this runs them in the suite.
 */
import { describe, it } from 'vitest';
import { expectPythonTestsPass, HAS_PYTHON } from '../python-unittest.js';

describe.skipIf(!HAS_PYTHON)('scrambled training values and tool names (model/scramble.py)', () => {
  it('redraws every copied identifier, and every identifier-like tool name, consistently and leaves words, numbers and keys alone', () => {
    expectPythonTestsPass('model/test_scramble.py', 10);
  });
});
