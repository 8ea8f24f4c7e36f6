import { describe, expect, it, vi } from 'vitest';
import { createNodeGuard } from '../../src/node.js';

// As where onnxruntime-node's install failed or its binding does not load on this platform.
vi.mock('onnxruntime-node', () => {
  throw new Error("Cannot find package 'onnxruntime-node'");
});

const LOAD_TIMEOUT_MS = 60_000;

describe('a Node guard without the native onnxruntime binding', () => {
  it(
    'runs on WASM and says in its status why the native backend is not used',
    async () => {
      const guard = createNodeGuard();
      try {
        const status = await guard.ready;
        expect(status.backend).toBe('wasm');
        expect(status.fallbackReason).toMatch(/^node: .*onnxruntime-node could not be loaded \(.*\); the native CPU backend is unavailable, onnxruntime-web's WASM backend runs the model instead$/);
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
});
