/**
 * The training-side labels of AgentDojo runs (model/agentdojo.py, which the embedded model's
 * counterfactuals and the adv-val choice set come from) must agree with the labels dev.jsonl ships.
 * The checks are Python's own unittest (standard library only); this runs them in the suite.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');
const HAS_DATA = requirement(existsSync('../shared/datasets/agentdojo/dev.jsonl'), 'the AgentDojo data in ../shared/datasets/agentdojo');

describe.skipIf(!HAS_PYTHON || !HAS_DATA)('AgentDojo training labels (model/agentdojo.py)', () => {
  it("agree with dev.jsonl's labels and injected_in, and make the counterfactuals their docs promise", () => {
    const run = spawnSync('python3', ['model/test_agentdojo.py'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toMatch(/Ran \d+ tests/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  });
});
