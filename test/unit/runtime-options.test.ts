/**
 * The runtime options are declared once and spelled the same for createGuard and createNodeGuard:
 * `backend` is the one name (createNodeGuard's `backends` list stays as an alias), and the guard's
 * options are split from the runtime's by one list of names.
 */
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { MODEL_RUNTIME_OPTION_KEYS, splitRuntimeOptions } from '../../src/core/runtime-options.js';
import { backendRequest, NATIVE_IN_WORKER_THREAD_REASON, planBackends, type BackendRequest } from '../../src/core/backend-plan.js';
import { createNodeGuard } from '../../src/node.js';

/** The backends createNodeGuard tries in its main thread, from its options (the core's one planner). */
async function nodeBackends(options: Parameters<typeof backendRequest>[0]): Promise<string[]> {
  const request: BackendRequest = backendRequest(options);
  return (await planBackends(request, { isNode: true, isWorkerThread: false, gpu: undefined })).backends;
}

describe('backend in Node', () => {
  it("takes createGuard's backend names: 'auto' tries onnxruntime-node then wasm, one name runs only that", async () => {
    expect(await nodeBackends({})).toEqual(['node', 'wasm']);
    expect(await nodeBackends({ backend: 'auto' })).toEqual(['node', 'wasm']);
    expect(await nodeBackends({ backend: 'wasm' })).toEqual(['wasm']);
    expect(await nodeBackends({ backend: 'node' })).toEqual(['node']);
  });

  it('keeps the older backends list working as an alias, in the order given', async () => {
    expect(await nodeBackends({ backends: ['wasm', 'node'] })).toEqual(['wasm', 'node']);
  });

  it('refuses both spellings at once, WebGPU in Node and an empty list, saying what is allowed, when the guard is made', async () => {
    expect(() => backendRequest({ backend: 'node', backends: ['node'] })).toThrow(/received both backend and backends; give one/);
    await expect(nodeBackends({ backend: 'webgpu' })).rejects.toThrow(InvalidOptionsError);
    await expect(nodeBackends({ backend: 'webgpu' })).rejects.toThrow(/Invalid option backend: received "webgpu" in Node; allowed here: "auto" \| "node" \| "wasm"/);
    await expect(nodeBackends({ backends: [] })).rejects.toThrow(/Invalid option backends: received \[\]; allowed in Node: a non-empty list of "node", "wasm"/);
    // createNodeGuard refuses them synchronously, before any model work.
    expect(() => createNodeGuard({ backend: 'webgpu' as never })).toThrow(/Invalid option backend: received "webgpu" in Node/);
    expect(() => createNodeGuard({ backends: [] })).toThrow(/allowed in Node: a non-empty list/);
  });

  it('plans wasm in a worker thread, with the reason, whatever the preference names onnxruntime-node', async () => {
    for (const [request, inChild] of [['auto', ['node', 'wasm']], ['node', ['node']], [['node', 'wasm'], ['node', 'wasm']]] as const) {
      // What a child process of the thread would run: the Node worker guard runs its model there.
      expect(await planBackends(request, { isNode: true, isWorkerThread: true, gpu: undefined })).toEqual({ backends: ['wasm'], fallbackReason: NATIVE_IN_WORKER_THREAD_REASON, inChildProcess: inChild });
    }
    expect(await planBackends(['wasm'], { isNode: true, isWorkerThread: true, gpu: undefined })).toEqual({ backends: ['wasm'], fallbackReason: null });
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
