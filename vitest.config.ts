import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/slow-first.js';

/**
 * Node test files that need a process of their own: those that replace a module (`vi.mock`, which must come
 * before anything imports it) and those marked `// vitest: isolate` (one reads the process's peak memory). The
 * other Node files share their worker's module cache, file after file, instead of each importing the guard,
 * transformers.js and onnxruntime afresh.
 */
function filesNeedingIsolation(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith(`browser${sep}`))
    .filter((file) => /\bvi\.mock\(|^\/\/ vitest: isolate\b/m.test(readFileSync(join(dir, file), 'utf8')))
    .map((file) => relative(import.meta.dirname, join(dir, file)));
}

const NODE_FILES = ['test/**/*.test.ts'];
const NOT_NODE = ['test/browser/**'];
const ISOLATED = filesNeedingIsolation(join(import.meta.dirname, 'test'));

export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 60_000,
    // The two workers share two cores: OpenMP threads (torch, OpenBLAS) that spin while they wait would take the
    // core the other worker's file needs. Every Python the suite starts inherits this, as adapt's does
    // (src/adapt/python.ts).
    env: { OMP_WAIT_POLICY: 'PASSIVE' },
    globalSetup: ['test/temp-root.ts'],
    // The slowest files start first, so neither worker runs one alone at the end (test/slow-first.ts).
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        extends: true,
        // Two workers on the 2-core machines this runs on (Vitest's default is cores - 1, i.e. one): many files
        // wait on a child process, a server or a worker thread, and the second core would sit idle.
        test: { name: 'node', include: NODE_FILES, exclude: [...NOT_NODE, ...ISOLATED], isolate: false, maxWorkers: 2 },
      },
      {
        extends: true,
        // The same group and workers as 'node', each file in a fresh process.
        test: { name: 'node-isolated', include: ISOLATED, maxWorkers: 2 },
      },
      {
        extends: true,
        // Chromium tests run after the Node tests, two files at a time: most of their time is spent waiting on the
        // browser (two at once took 83 s against 133 s one at a time, for the same CPU time). Each dev server has
        // its own dependency cache (test/browser/browser-helpers.ts). A file starts its own server and browser and
        // closes them, so the files of a worker share its modules (Vite, Playwright, the guard) as 'node' does.
        test: { name: 'browser', include: ['test/browser/**/*.test.ts'], isolate: false, maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
