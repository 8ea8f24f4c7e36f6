/**
 * The MCP evaluation set (lab/eval/mcp_sets.py): the choosing and reporting halves share no server and
 * no schema, report servers were never trained on, clients hold 10-30 real tools, and every injected case has a
 * benign twin. The checks are Python's own unittest (standard library only, on ../shared/datasets); this runs
 * them in the suite and reads a small generated set with the evaluation's own case reader.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeTools } from '../../src/core/tools.js';
import { readEvalCases } from '../../src/eval/cases.js';
import { requirement } from '../requirements.js';

const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');
const HAS_DATASETS = requirement(existsSync('../shared/datasets/mcp_servers'), '../shared/datasets');
const PYTHON_TIMEOUT_MS = 60_000;
const SMALL_SET_PAIRS = 16;

describe.skipIf(!HAS_PYTHON || !HAS_DATASETS)('the MCP evaluation set (lab/eval/mcp_sets.py)', () => {
  it('keeps the halves apart, reports on untrained servers, twins every injected case and keeps adapt traffic apart', () => {
    const run = spawnSync('python3', ['lab/eval/test_mcp_sets.py'], { encoding: 'utf8', timeout: PYTHON_TIMEOUT_MS });
    expect(run.stderr).toMatch(/Ran 10 tests/);
    expect(run.stderr).not.toMatch(/skipped/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  });

  it('writes cases that the evaluation reads, with the poisoned tool and the injected message it names', () => {
    const out = mkdtempSync(join(tmpdir(), 'edgearmor-mcp-sets-'));
    const run = spawnSync('python3', ['lab/eval/mcp_sets.py', '--n', String(SMALL_SET_PAIRS), '--out', out], { encoding: 'utf8', timeout: PYTHON_TIMEOUT_MS });
    expect(run.status, run.stderr).toBe(0);
    for (const half of ['choose', 'report']) {
      const cases = readEvalCases(join(out, `mcp-${half}.jsonl`));
      expect(cases).toHaveLength(2 * SMALL_SET_PAIRS);
      expect(new Set(cases.map((c) => c.set))).toEqual(new Set([`mcp-${half}`]));
      expect(cases.filter((c) => c.label === 'injected')).toHaveLength(SMALL_SET_PAIRS);
      for (const c of cases) {
        const names = normalizeTools(c.input.tools ?? []).map((t) => t.name);
        expect(names.length).toBeGreaterThanOrEqual(10);
        expect(names.length).toBeLessThanOrEqual(30);
        if (c.poisonedTool !== null) expect(names).toContain(c.poisonedTool);
        for (const i of c.injectedIn) expect(c.input.messages[i]?.role).toBe('tool');
      }
      const kinds = new Set(cases.filter((c) => c.label === 'injected').map((c) => c.kind));
      expect(kinds).toEqual(new Set(['tool_poisoning', 'tool_result_injection']));
    }
  });
});
