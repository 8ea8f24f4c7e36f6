import type { JsonObject, JsonValue } from './types.js';

/** Every error code EdgeArmor can report; `internal` marks an error that is not an EdgeArmorError. */
export type ErrorCode =
  | 'invalid-input'
  | 'invalid-options'
  | 'model-load-failed'
  | 'integrity-mismatch'
  | 'context-too-long'
  | 'inference-failed'
  | 'device-lost'
  | 'out-of-memory'
  | 'aborted'
  | 'timeout'
  | 'worker-crashed'
  | 'disposed'
  | 'backend-unavailable'
  | 'remote-proxy-failed'
  | 'internal';

/** The plain-data form of an error, as it crosses a worker or process boundary. */
export interface WireError {
  name: string;
  code: ErrorCode;
  message: string;
  details: JsonObject;
}

/** Base class of every malfunction EdgeArmor throws (a detected injection is a verdict, never an error). */
export class EdgeArmorError extends Error {
  /** Machine-readable error code. */
  readonly code: ErrorCode;
  /** Plain JSON details, safe to serialise. */
  readonly details: JsonObject;

  constructor(code: ErrorCode, message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EdgeArmorError';
    this.code = code;
    this.details = details;
  }
}

/** The guard input (conversation, action or tools) is malformed. */
export class InvalidInputError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('invalid-input', message, details, options);
    this.name = 'InvalidInputError';
  }
}

/** An option has the wrong type or is out of range. */
export class InvalidOptionsError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('invalid-options', message, details, options);
    this.name = 'InvalidOptionsError';
  }
}

/** The proxy model or its tokenizer could not be loaded. */
export class ModelLoadError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('model-load-failed', message, details, options);
    this.name = 'ModelLoadError';
  }
}

/** A model file's hash does not match the expected one, which may indicate tampering. */
export class IntegrityError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('integrity-mismatch', message, details, options);
    this.name = 'IntegrityError';
  }
}

/** The context cannot fit the model window without dropping what must be kept. */
export class ContextTooLongError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('context-too-long', message, details, options);
    this.name = 'ContextTooLongError';
  }
}

/** Running the proxy model failed or produced unusable numbers. */
export class InferenceError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('inference-failed', message, details, options);
    this.name = 'InferenceError';
  }
}

/** The GPU device went away during inference (driver reset, GPU process crash, sleep); the worker guard replaces its worker. */
export class DeviceLostError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('device-lost', message, details, options);
    this.name = 'DeviceLostError';
  }
}

/** Inference ran out of memory (GPU buffers or the wasm heap); the worker guard replaces its worker to get it back. */
export class OutOfMemoryError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('out-of-memory', message, details, options);
    this.name = 'OutOfMemoryError';
  }
}

/** The caller aborted the operation through its signal. */
export class GuardAbortedError extends EdgeArmorError {
  constructor(message = 'The guard operation was aborted by the caller.', details: JsonObject = {}, options?: { cause?: unknown }) {
    super('aborted', message, details, options);
    this.name = 'GuardAbortedError';
  }
}

/** The operation took longer than its `timeoutMs`. */
export class GuardTimeoutError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('timeout', message, details, options);
    this.name = 'GuardTimeoutError';
  }
}

/** The worker running the model died. */
export class WorkerCrashedError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('worker-crashed', message, details, options);
    this.name = 'WorkerCrashedError';
  }
}

/** The guard was used after `dispose()`. */
export class DisposedError extends EdgeArmorError {
  constructor(message = 'The guard has been disposed; create a new one.', details: JsonObject = {}, options?: { cause?: unknown }) {
    super('disposed', message, details, options);
    this.name = 'DisposedError';
  }
}

/** No requested inference backend could be started; `details.causes` lists each failure. */
export class BackendUnavailableError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('backend-unavailable', message, details, options);
    this.name = 'BackendUnavailableError';
  }
}

/** A remote scoring proxy (e.g. a vLLM server) failed. */
export class RemoteProxyError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('remote-proxy-failed', message, details, options);
    this.name = 'RemoteProxyError';
  }
}

/** A failure that was not an EdgeArmorError (a bug or a foreign exception), carried with code `internal`. */
export class InternalError extends EdgeArmorError {
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('internal', message, details, options);
    this.name = 'InternalError';
  }
}

/** MindGuard could not work with its options or inputs (a detection is a verdict, never this). */
export class MindGuardError extends EdgeArmorError {
  declare readonly code: 'invalid-options' | 'invalid-input';
  constructor(code: 'invalid-options' | 'invalid-input', message: string, details: Readonly<Record<string, unknown>> = {}, options?: { cause?: unknown }) {
    super(code, message, jsonObject(details), options);
    this.name = 'MindGuardError';
  }
}

/** A tool-definition pin store that cannot be read as written (unparseable, another schema, or an integrity hash that does not match): may indicate tampering, never re-trusted silently. */
export class PinStoreError extends EdgeArmorError {
  declare readonly code: 'integrity-mismatch';
  constructor(message: string, details: JsonObject = {}, options?: { cause?: unknown }) {
    super('integrity-mismatch', message, details, options);
    this.name = 'PinStoreError';
  }
}

/** Subclasses that share a code with another class, rebuilt by name so they keep their class across the worker boundary. */
const CLASS_BY_NAME: Readonly<Record<string, (code: ErrorCode, message: string, details: JsonObject) => EdgeArmorError | null>> = Object.freeze({
  MindGuardError: (code: ErrorCode, message: string, details: JsonObject) =>
    code === 'invalid-options' || code === 'invalid-input' ? new MindGuardError(code, message, details) : null,
  PinStoreError: (code: ErrorCode, message: string, details: JsonObject) => (code === 'integrity-mismatch' ? new PinStoreError(message, details) : null),
});

type ErrorConstructorFor = new (message: string, details?: JsonObject) => EdgeArmorError;

const CLASS_BY_CODE: Readonly<Record<ErrorCode, ErrorConstructorFor>> = Object.freeze({
  'invalid-input': InvalidInputError,
  'invalid-options': InvalidOptionsError,
  'model-load-failed': ModelLoadError,
  'integrity-mismatch': IntegrityError,
  'context-too-long': ContextTooLongError,
  'inference-failed': InferenceError,
  'device-lost': DeviceLostError,
  'out-of-memory': OutOfMemoryError,
  aborted: GuardAbortedError,
  timeout: GuardTimeoutError,
  'worker-crashed': WorkerCrashedError,
  disposed: DisposedError,
  'backend-unavailable': BackendUnavailableError,
  'remote-proxy-failed': RemoteProxyError,
  internal: InternalError,
});

/** Every error code, in a stable order. */
export const ERROR_CODES: readonly ErrorCode[] = Object.freeze(Object.keys(CLASS_BY_CODE) as ErrorCode[]);

/** Whether a value is an EdgeArmorError instance (wire errors must go through `deserializeError` first). */
export function isEdgeArmorError(value: unknown): value is EdgeArmorError {
  return value instanceof EdgeArmorError;
}

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(CLASS_BY_CODE, value);
}

function toJsonSafe(value: unknown, depth = 0): JsonValue {
  // Details must survive JSON and structuredClone; anything else is stringified.
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (depth > 8) return '[too deep]';
  if (Array.isArray(value)) return value.map((v) => toJsonSafe(v, depth + 1));
  if (typeof value === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v !== undefined) out[k] = toJsonSafe(v, depth + 1);
    }
    return out;
  }
  return String(value);
}

function jsonObject(value: unknown): JsonObject {
  const json = toJsonSafe(value);
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : {};
}

/** Turns any thrown value into the `{name, code, message, details}` wire format. */
export function serializeError(error: unknown): WireError {
  if (error instanceof EdgeArmorError) {
    const details = toJsonSafe(error.details);
    return {
      name: error.name,
      code: error.code,
      message: error.message,
      details: details !== null && typeof details === 'object' && !Array.isArray(details) ? details : {},
    };
  }
  if (error instanceof Error) {
    // A platform abort (DOMException 'AbortError') is the caller's abort, not a bug.
    if (error.name === 'AbortError') {
      return { name: 'GuardAbortedError', code: 'aborted', message: error.message || 'Aborted.', details: { originalName: error.name } };
    }
    return { name: 'InternalError', code: 'internal', message: error.message, details: { originalName: error.name } };
  }
  return { name: 'InternalError', code: 'internal', message: `Non-error value thrown: ${String(error)}`, details: { thrownType: typeof error } };
}

/** Rebuilds the right EdgeArmorError subclass from its wire format; unknown codes become InternalError. */
export function deserializeError(wire: unknown): EdgeArmorError {
  if (wire === null || typeof wire !== 'object') {
    return new InternalError(`Malformed wire error: expected an object, received ${typeof wire}.`);
  }
  const record = wire as Record<string, unknown>;
  const message = typeof record['message'] === 'string' ? record['message'] : 'Unknown error.';
  const rawDetails = toJsonSafe(record['details'] ?? {});
  const details: JsonObject = rawDetails !== null && typeof rawDetails === 'object' && !Array.isArray(rawDetails) ? rawDetails : {};
  const code = record['code'];
  if (!isErrorCode(code)) {
    return new InternalError(message, { ...details, originalCode: toJsonSafe(code), originalName: toJsonSafe(record['name']) });
  }
  const byName = typeof record['name'] === 'string' && Object.prototype.hasOwnProperty.call(CLASS_BY_NAME, record['name']) ? CLASS_BY_NAME[record['name']]!(code, message, details) : null;
  if (byName) return byName;
  const Ctor = CLASS_BY_CODE[code];
  return new Ctor(message, details);
}
