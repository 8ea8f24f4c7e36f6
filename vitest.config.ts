import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/slow-first.js';

export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 60_000,
    globalSetup: ['test/temp-root.ts'],
    // The slowest files start first, so neither worker runs one alone at the end (test/slow-first.ts).
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        extends: true,
        // Two workers on the 2-core machines this runs on (Vitest's default is cores - 1, i.e. one): many files
        // wait on a child process, a server or a worker thread, and the second core would sit idle.
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: ['test/browser/**'], maxWorkers: 2 },
      },
      {
        extends: true,
        // Chromium tests run after the Node tests, two files at a time: most of their time is spent waiting on the
        // browser (two at once took 83 s against 133 s one at a time, for the same CPU time). Each dev server has
        // its own dependency cache (test/browser/browser-helpers.ts).
        test: { name: 'browser', include: ['test/browser/**/*.test.ts'], maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
