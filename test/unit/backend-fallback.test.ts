import { describe, expect, it } from 'vitest';
import { IntegrityError, ModelLoadError } from '../../src/core/errors.js';
import type { OrtBackend } from '../../src/core/backend-plan.js';
import { firstLoadingBackend } from '../../src/engine/local-guard.js';

/** A loader that fails on the backends named in `failing`, each with its own reason. */
const loader = (failing: Partial<Record<OrtBackend, Error>>) => async (backend: OrtBackend) => {
  const error = failing[backend];
  if (error) throw error;
  return `session on ${backend}`;
};

describe('trying the planned backends in order', () => {
  it('uses the first backend that loads, and gives the earlier ones\' failures as the fallback reason', async () => {
    const result = await firstLoadingBackend(['webgpu', 'wasm'], loader({ webgpu: new Error('adapter lost') }));
    expect(result).toEqual({ value: 'session on wasm', fallbackReason: 'webgpu: adapter lost' });
    expect(await firstLoadingBackend(['node', 'wasm'], loader({}))).toEqual({ value: 'session on node', fallbackReason: null });
  });

  it('throws the last failure, of its own class, naming every backend\'s failure when none loads', async () => {
    const error = await firstLoadingBackend(['node', 'wasm'], loader({ node: new Error('libonnxruntime.so: cannot open'), wasm: new ModelLoadError('unsupported opset 99', { file: 'onnx/model_q4.onnx' }) })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelLoadError);
    expect(error).toMatchObject({ code: 'model-load-failed', details: { file: 'onnx/model_q4.onnx' } });
    expect((error as Error).message).toBe('no backend could load the model: node: libonnxruntime.so: cannot open; wasm: unsupported opset 99');
  });

  it('refuses files that changed after they were verified at once, without trying another backend', async () => {
    const tried: OrtBackend[] = [];
    const tampered = new IntegrityError('model file hash mismatch: may indicate tampering', { file: 'onnx/model_q4.onnx' });
    const error = await firstLoadingBackend(['node', 'wasm'], async (backend) => {
      tried.push(backend);
      throw tampered;
    }).catch((e: unknown) => e);
    expect(error).toBe(tampered);
    expect(tried).toEqual(['node']);
  });

  it('refuses an empty plan with an InvalidOptionsError naming what is allowed', async () => {
    await expect(firstLoadingBackend([], loader({}))).rejects.toMatchObject({ code: 'invalid-options', message: expect.stringMatching(/received an empty list; allowed: one or more of "node", "wasm", "webgpu"/) });
  });
});
