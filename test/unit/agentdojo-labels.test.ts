/**
 * The training-side labels of AgentDojo runs (model/agentdojo.py, which the embedded model's
 * counterfactuals and the adv-val choice set come from) must agree with the labels dev.jsonl ships.
 * The checks are Python's own unittest (standard library only); this runs them in the suite.
 */
import { existsSync } from 'node:fs';
import { describe, it } from 'vitest';
import { expectPythonTestsPass, HAS_PYTHON } from '../python-unittest.js';
import { requirement } from '../requirements.js';

const HAS_DATA = requirement(existsSync('../shared/datasets/agentdojo/dev.jsonl'), 'the AgentDojo data in ../shared/datasets/agentdojo');

describe.skipIf(!HAS_PYTHON || !HAS_DATA)('AgentDojo training labels (model/agentdojo.py)', () => {
  it("agree with dev.jsonl's labels and injected_in, and make the counterfactuals their docs promise", () => {
    expectPythonTestsPass('model/test_agentdojo.py', 8);
  });
});
