/**
 * What an onnxruntime failure during a forward pass means for the guard. onnxruntime (node, wasm,
 * WebGPU) reports every failure as a plain Error with a message, so the kind is read from the message:
 * a lost GPU device and an exhausted memory each get their own code (the worker guard replaces its
 * worker for both); anything else is an InferenceError that keeps the original message.
 */
import { DeviceLostError, InferenceError, isEdgeArmorError, OutOfMemoryError, type EdgeArmorError } from '../core/errors.js';

// WebGPU: "GPUDevice was lost", "device lost", "Device is lost"; Dawn: "DeviceLost".
const DEVICE_LOST = /device\s*(?:was|is|has been)?\s*lost\b/i;
// C++ bad_alloc, onnxruntime's allocator, wasm heap growth, V8 array buffers, WebGPU OOM.
const OUT_OF_MEMORY = /out of memory|\boom\b|bad_alloc|failed to allocate|cannot allocate|allocation failed|memory\.grow|maximum memory size|GPUOutOfMemoryError/i;

/** Maps an error thrown by a forward pass to the guard's error classes. */
export function classifyInferenceError(error: unknown, backend: string): EdgeArmorError {
  if (isEdgeArmorError(error)) return error;
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  const details = { backend, originalName: name, originalMessage: message };
  if (DEVICE_LOST.test(message) || name === 'GPUDeviceLostInfo') {
    return new DeviceLostError(`The ${backend} device was lost during inference (${message}); the next check starts a new worker.`, details, { cause: error });
  }
  if (OUT_OF_MEMORY.test(message) || name === 'GPUOutOfMemoryError') {
    return new OutOfMemoryError(`Inference on ${backend} ran out of memory (${message}); lower maxBatchTokens or the context size.`, details, { cause: error });
  }
  return new InferenceError(`Inference on ${backend} failed: ${message}`, details, { cause: error });
}
