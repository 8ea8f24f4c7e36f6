import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { BackendUnavailableError } from '../../src/core/errors.js';
import { ONNXRUNTIME_NODE_INSTALL, ONNXRUNTIME_NODE_VERSION } from '../../src/engine/ort-session.js';
import { createNodeGuard } from '../../src/node.js';

// As where onnxruntime-node (an optional peer dependency) was never installed: a browser-only install.
vi.mock('onnxruntime-node', () => {
  throw new Error("Cannot find package 'onnxruntime-node' imported from /app/node_modules/edgearmor/dist/engine/ort-session.js");
});

const LOAD_TIMEOUT_MS = 60_000;
const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<string, Record<string, unknown>>;

describe('a Node guard without onnxruntime-node installed', () => {
  it('names the release package.json pins: an optional peer dependency, and a dev dependency for these tests', () => {
    expect(ONNXRUNTIME_NODE_INSTALL).toBe('npm install onnxruntime-node@1.30.0');
    expect(PACKAGE['peerDependencies']?.['onnxruntime-node']).toBe(ONNXRUNTIME_NODE_VERSION);
    expect(PACKAGE['peerDependenciesMeta']?.['onnxruntime-node']).toEqual({ optional: true });
    expect(PACKAGE['devDependencies']?.['onnxruntime-node']).toBe(ONNXRUNTIME_NODE_VERSION);
    expect(PACKAGE['dependencies']?.['onnxruntime-node']).toBeUndefined();
    expect(PACKAGE['dependencies']?.['onnxruntime-web']).toBe(ONNXRUNTIME_NODE_VERSION);
  });

  it(
    "runs on WASM with backend 'auto' and says in its status what to install for the native backend",
    async () => {
      const guard = createNodeGuard();
      try {
        const status = await guard.ready;
        expect(status.backend).toBe('wasm');
        expect(status.fallbackReason).toMatch(/^node: onnxruntime-node is not installed: .*install it with `npm install onnxruntime-node@1\.30\.0` \(backend 'auto' runs the model on onnxruntime-web's WASM backend instead\)$/);
        const verdict = await guard.check({
          messages: [
            { role: 'user', content: 'Book the cheapest flight.' },
            { role: 'assistant', content: '', tool_calls: [{ name: 'search_flights', arguments: {} }] },
            { role: 'tool', tool_name: 'search_flights', content: 'LH123 $300' },
          ],
          action: { name: 'book_flight', arguments: { flight: 'LH123' } },
        });
        expect(verdict.backend).toBe('wasm');
      } finally {
        await guard.dispose();
      }
    },
    LOAD_TIMEOUT_MS,
  );

  it(
    "refuses backend 'node' with a BackendUnavailableError that carries the install command",
    async () => {
      const guard = createNodeGuard({ backend: 'node' });
      try {
        const error = await guard.ready.then(() => null, (e: unknown) => e);
        expect(error).toBeInstanceOf(BackendUnavailableError);
        expect((error as BackendUnavailableError).code).toBe('backend-unavailable');
        expect((error as BackendUnavailableError).details).toMatchObject({ backend: 'node', install: 'npm install onnxruntime-node@1.30.0' });
        expect((error as Error).message).toContain('install it with `npm install onnxruntime-node@1.30.0`');
      } finally {
        await guard.dispose();
      }
    },
    LOAD_TIMEOUT_MS,
  );
});
