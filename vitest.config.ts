import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'node', include: ['test/**/*.test.ts'], exclude: ['test/browser/**'] },
      },
      {
        extends: true,
        // Chromium tests run after the Node tests and one file at a time: each starts a browser and a Vite server.
        test: { name: 'browser', include: ['test/browser/**/*.test.ts'], maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
