import { describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  ContextTooLongError,
  deserializeError,
  DisposedError,
  EdgeArmorError,
  GuardAbortedError,
  GuardTimeoutError,
  InferenceError,
  DeviceLostError,
  OutOfMemoryError,
  IntegrityError,
  InternalError,
  InvalidInputError,
  InvalidOptionsError,
  ModelLoadError,
  RemoteProxyError,
  serializeError,
  WorkerCrashedError,
} from '../../src/core/index.js';
import { ERROR_CODES } from '../../src/core/errors.js';
import { MindGuardError, resolveMindGuardOptions } from '../../src/core/mindguard/index.js';

describe('error wire format', () => {
  const samples: EdgeArmorError[] = [
    new InvalidInputError('bad input', { where: 'messages[0]' }),
    new InvalidOptionsError('bad option', { option: 'tau' }),
    new ModelLoadError('no model'),
    new IntegrityError('model file hash mismatch: may indicate tampering', { file: 'onnx/model.onnx' }),
    new ContextTooLongError('too long', { tokens: 9000, max: 8192 }),
    new InferenceError('nan'),
    new DeviceLostError('GPUDevice was lost', { backend: 'webgpu' }),
    new OutOfMemoryError('std::bad_alloc', { backend: 'wasm' }),
    new GuardAbortedError(),
    new GuardTimeoutError('slow', { timeoutMs: 30000 }),
    new WorkerCrashedError('crash'),
    new DisposedError(),
    new BackendUnavailableError('none', { causes: [{ backend: 'webgpu', message: 'no adapter' }] }),
    new RemoteProxyError('502'),
    new InternalError('bug'),
  ];

  it('covers every error code with one class', () => {
    expect(samples.map((e) => e.code).sort()).toEqual([...ERROR_CODES].sort());
  });

  it('round-trips through JSON keeping class, name, code, message and details', () => {
    for (const error of samples) {
      const wire = JSON.parse(JSON.stringify(serializeError(error))) as unknown;
      const back = deserializeError(wire);
      expect(back).toBeInstanceOf(error.constructor);
      expect(back).toBeInstanceOf(EdgeArmorError);
      expect(back.name).toBe(error.name);
      expect(back.code).toBe(error.code);
      expect(back.message).toBe(error.message);
      expect(back.details).toEqual(error.details);
    }
  });

  it('survives structuredClone as plain data', () => {
    const wire = serializeError(new InvalidInputError('x', { a: [1, 'b'] }));
    expect(structuredClone(wire)).toEqual(wire);
  });

  it('turns foreign errors and thrown non-errors into code "internal"', () => {
    expect(serializeError(new TypeError('boom'))).toEqual({ name: 'InternalError', code: 'internal', message: 'boom', details: { originalName: 'TypeError' } });
    expect(serializeError('str').code).toBe('internal');
  });

  it('maps a platform AbortError to code "aborted"', () => {
    const abort = new Error('stop');
    abort.name = 'AbortError';
    expect(deserializeError(serializeError(abort))).toBeInstanceOf(GuardAbortedError);
  });

  it('rebuilds unknown codes and malformed wire values as InternalError', () => {
    const back = deserializeError({ name: 'X', code: 'future-code', message: 'm', details: {} });
    expect(back).toBeInstanceOf(InternalError);
    expect(back.details).toMatchObject({ originalCode: 'future-code' });
    expect(deserializeError(42)).toBeInstanceOf(InternalError);
  });

  it('makes MindGuard failures EdgeArmorErrors with a code, which keep their class across the wire', () => {
    const thrown = (() => {
      try {
        resolveMindGuardOptions({ airThreshold: -1 });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(thrown).toBeInstanceOf(MindGuardError);
    expect(thrown).toBeInstanceOf(EdgeArmorError);
    expect(thrown).toMatchObject({ name: 'MindGuardError', code: 'invalid-options', details: { option: 'airThreshold' } });
    const back = deserializeError(structuredClone(serializeError(thrown)));
    expect(back).toBeInstanceOf(MindGuardError);
    expect(back).toMatchObject({ name: 'MindGuardError', code: 'invalid-options', message: (thrown as Error).message });
  });
});
