/**
 * The runtime options are declared once and spelled the same for createGuard and createNodeGuard:
 * `backend` is the one name (createNodeGuard's `backends` list stays as an alias), and the guard's
 * options are split from the runtime's by one list of names.
 */
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { MODEL_RUNTIME_OPTION_KEYS, splitRuntimeOptions } from '../../src/engine/runtime-options.js';
import { nodeBackends } from '../../src/node.js';

describe('backend in Node', () => {
  it("takes createGuard's backend names: 'auto' tries onnxruntime-node then wasm, one name runs only that", () => {
    expect(nodeBackends({})).toEqual(['node', 'wasm']);
    expect(nodeBackends({ backend: 'auto' })).toEqual(['node', 'wasm']);
    expect(nodeBackends({ backend: 'wasm' })).toEqual(['wasm']);
    expect(nodeBackends({ backend: 'node' })).toEqual(['node']);
  });

  it('keeps the older backends list working as an alias, in the order given', () => {
    expect(nodeBackends({ backends: ['wasm', 'node'] })).toEqual(['wasm', 'node']);
  });

  it('refuses both spellings at once, WebGPU in Node and an empty list, saying what is allowed', () => {
    expect(() => nodeBackends({ backend: 'node', backends: ['node'] })).toThrow(/received both backend and backends; give one/);
    expect(() => nodeBackends({ backend: 'webgpu' })).toThrow(InvalidOptionsError);
    expect(() => nodeBackends({ backend: 'webgpu' })).toThrow(/Invalid option backend: received "webgpu" in Node; allowed here: "auto" \| "node" \| "wasm"/);
    expect(() => nodeBackends({ backends: [] })).toThrow(/Invalid option backends: received \[\]; allowed in Node: a non-empty list of "node", "wasm"/);
  });
});

describe('splitRuntimeOptions', () => {
  it("separates the guard's options from the runtime's, leaving out the shell's own and undefined values", () => {
    const { guard, runtime } = splitRuntimeOptions(
      { tau: 0.5, onError: 'allow', modelVariant: 'fp32', scoring: 'naive', maxBatchTokens: undefined, modelDir: '/m' } as never,
      ['modelDir'] as never,
    );
    expect(guard).toEqual({ tau: 0.5, onError: 'allow' });
    expect(runtime).toEqual({ modelVariant: 'fp32', scoring: 'naive' });
    expect(MODEL_RUNTIME_OPTION_KEYS).toContain('remoteProxy');
  });

  it('validates remoteProxy once, where the options are split', () => {
    expect(() => splitRuntimeOptions({ remoteProxy: { url: 'ftp://x', model: 'm' } }, [])).toThrow(InvalidOptionsError);
  });
});
