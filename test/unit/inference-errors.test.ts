import { describe, expect, it } from 'vitest';
import { DeviceLostError, InferenceError, InvalidInputError, OutOfMemoryError, deserializeError, serializeError } from '../../src/core/errors.js';
import { classifyInferenceError } from '../../src/engine/inference-errors.js';

describe('classifyInferenceError', () => {
  it.each([
    'GPUDevice was lost: Device was destroyed.',
    '[WebGPU] device lost (reason: unknown)',
    'Dawn: DeviceLost',
  ])('reads a lost device from %j', (message) => {
    const e = classifyInferenceError(new Error(message), 'webgpu');
    expect(e).toBeInstanceOf(DeviceLostError);
    expect(e.details).toMatchObject({ backend: 'webgpu', originalMessage: message });
  });

  it.each([
    'std::bad_alloc',
    'Failed to allocate memory for requested buffer of size 1073741824',
    'WebAssembly.Memory.grow(): Maximum memory size exceeded',
    'RangeError: Array buffer allocation failed',
    'out of memory',
  ])('reads exhausted memory from %j', (message) => {
    expect(classifyInferenceError(new Error(message), 'wasm')).toBeInstanceOf(OutOfMemoryError);
  });

  it('keeps other failures as InferenceError with the original message, and passes EdgeArmorErrors through', () => {
    const e = classifyInferenceError(new TypeError('input ids must be int64'), 'node');
    expect(e).toBeInstanceOf(InferenceError);
    expect(e.message).toContain('input ids must be int64');
    expect(e.details).toMatchObject({ originalName: 'TypeError' });
    const own = new InvalidInputError('bad');
    expect(classifyInferenceError(own, 'node')).toBe(own);
    expect(classifyInferenceError('plain string', 'node')).toBeInstanceOf(InferenceError);
  });

  it('survives the worker boundary with its class and code', () => {
    const wire = serializeError(classifyInferenceError(new Error('GPUDevice was lost'), 'webgpu'));
    expect(wire.code).toBe('device-lost');
    expect(deserializeError(structuredClone(wire))).toBeInstanceOf(DeviceLostError);
  });
});
