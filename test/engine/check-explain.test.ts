/**
 * The README quick start, as a user runs it: `edgearmor check examples/seed-travel.jsonl --explain` on the
 * embedded model prints BLOCK / ALLOW / BLOCK, one legend and a FLAGGED row for each block, and a reason per case.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const EMBEDDED_MODEL = join(ROOT, 'public/models/edgearmor-proxy');
const CLI_TIMEOUT_MS = 120_000;

describe.skipIf(!requirement(existsSync(join(EMBEDDED_MODEL, 'manifest.json')), 'the embedded model'))('edgearmor check --explain on the seed travel cases', () => {
  it(
    'blocks, allows and blocks, with one legend above the first table, a FLAGGED row per block and an explanation per case',
    () => {
      const out = execFileSync(NODE, [CLI, 'check', join(ROOT, 'examples/seed-travel.jsonl'), '--explain'], {
        encoding: 'utf8',
        timeout: CLI_TIMEOUT_MS,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const cases = out.split(/^(?=case )/m).filter((c) => c.trim() !== '');
      expect(cases.map((c) => c.match(/^case \S+: (BLOCK|ALLOW)/)?.[1])).toEqual(['BLOCK', 'ALLOW', 'BLOCK']);
      expect(out.match(/^ {2}legend: /gm)).toHaveLength(1);
      expect(cases[0]).toMatch(/^ {2}legend: /m);
      for (const c of cases) {
        expect(c.match(/^ {2}explain: /gm)).toHaveLength(1);
        expect(c.includes('FLAGGED')).toBe(c.startsWith('case seed-travel-injection') || c.startsWith('case seed-travel-multi-turn-cot'));
      }
      expect(cases[0]).toMatch(/without read_travel_plan result, messages\[3\] \(dS\) .* FLAGGED: injected tool result/);
      // The multi-turn block comes from attention to a tool; no tool description is called poisoned.
      expect(cases[2]).not.toMatch(/poisoned tool description/);
      expect(cases[2]).toMatch(/FLAGGED: tool read_travel_plan pulls the call/);
    },
    CLI_TIMEOUT_MS,
  );
});
