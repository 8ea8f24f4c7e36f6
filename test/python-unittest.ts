/**
 * model/'s standard-library unittest files, run in the suite: each wrapper names the file and how many tests it
 * holds, so a test dropped or skipped there fails here.
 */
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { requirement } from './requirements.js';

export const HAS_PYTHON = requirement(spawnSync('python3', ['--version']).status === 0, 'python3');

/** Runs `python3 <file>` and asserts that exactly `count` tests ran, none skipped, and all passed. */
export function expectPythonTestsPass(file: string, count: number, timeoutMs = 60_000): void {
  const run = spawnSync('python3', [file], { encoding: 'utf8', timeout: timeoutMs });
  expect(run.stderr).toMatch(new RegExp(`Ran ${count} tests?\\b`));
  expect(run.stderr).not.toMatch(/skipped/);
  expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
  expect(run.status).toBe(0);
}
