/**
 * The training-side padding (model/padding.py, `train.py --pad-results`): filler from GSM8K's train split that
 * none of the evaluation's padding rewrites use, padded conversations that fit the window with the result whole,
 * and ablated copies that keep the padding. The checks are Python's own unittest (standard library only); this
 * runs them in the suite.
 */
import { describe, it } from 'vitest';
import { expectPythonTestsPass, HAS_PYTHON } from '../python-unittest.js';

describe.skipIf(!HAS_PYTHON)('padded training conversations (model/padding.py)', () => {
  it('pads one result with unseen filler up to the window and keeps everything else as it was', () => {
    expectPythonTestsPass('model/test_padding.py', 7);
  });
});
