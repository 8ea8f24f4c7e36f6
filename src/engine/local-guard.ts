/**
 * The in-process guard: the core's conductor over an onnxruntime engine (or a remote proxy) loaded
 * here. Node uses it directly; the worker runs the same one behind the wire protocol. This module only
 * loads: it verifies the model's files and tries the planned backends in order; every check is the
 * conductor's.
 */
import type { OrtBackend } from '../core/backend-plan.js';
import { createConductor, type LocalGuard } from '../core/conductor.js';
import { IntegrityError, InvalidOptionsError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { GuardOptions } from '../core/options.js';
import type { ModelRuntimeOptions } from '../core/runtime-options.js';
import type { LoadedScorer, ScorerSource } from '../core/scorer-port.js';
import { createEngine, type EngineOptions, type ProxyEngine } from './engine.js';
import { loadModelFiles, loadTokenizerFiles, type FileReader, type ModelFiles } from './model-files.js';
import { createRemoteEngine } from './remote-proxy.js';

export type { LocalGuard } from '../core/conductor.js';

/** Where and how the in-process guard runs its model: the runtime options plus the resolved model location and backends. */
export interface LocalGuardRuntime extends Omit<ModelRuntimeOptions, 'modelManifest'> {
  /** Reads the model's files (integrity-checked against its manifest); with `remoteProxy`, only its tokenizer and config are read. */
  reader: FileReader;
  /** Backends to try, in order (the core's backend plan); the first that loads is used and the others' failures are reported. */
  backends: readonly OrtBackend[];
  /** Why earlier preferred backends were skipped before loading (e.g. no WebGPU adapter). */
  fallbackReason?: string | null;
  onProgress?: (event: GuardProgress) => void;
}

/** Loads the model the runtime names: verifies its files, then tries the planned backends in order. */
export async function loadEngineScorer(runtime: LocalGuardRuntime): Promise<LoadedScorer> {
  const onFile = (file: string, bytes: number) => runtime.onProgress?.({ type: 'verified', file, bytes });
  if (runtime.remoteProxy) {
    const files = await loadTokenizerFiles(runtime.reader, onFile);
    const scorer = await createRemoteEngine(files, runtime.remoteProxy, runtime.chatTemplate !== undefined ? { chatTemplate: runtime.chatTemplate } : {});
    return { scorer, modelOptions: files.modelOptions };
  }
  const files = await loadModelFiles(runtime.reader, runtime.modelVariant ?? 'q4', onFile);
  const { engine, fallbackReason } = await loadPlannedEngine(files, runtime.backends, {
    ...(runtime.wasmThreads !== undefined ? { wasmThreads: runtime.wasmThreads } : {}),
    ...(runtime.wasmPaths !== undefined ? { wasmPaths: runtime.wasmPaths } : {}),
    ...(runtime.maxBatchTokens !== undefined ? { maxBatchTokens: runtime.maxBatchTokens } : {}),
    ...(runtime.scoring !== undefined ? { scoring: runtime.scoring } : {}),
    ...(runtime.chatTemplate !== undefined ? { chatTemplate: runtime.chatTemplate } : {}),
  });
  return { scorer: engine, modelOptions: files.modelOptions, fallbackReason };
}

/** Loads verified model files on the first of the planned backends that can run them (see firstLoadingBackend): the one engine loader every shell uses. */
export async function loadPlannedEngine(files: ModelFiles, backends: readonly OrtBackend[], options: Omit<EngineOptions, 'backend'> = {}): Promise<{ engine: ProxyEngine; fallbackReason: string | null }> {
  const { value: engine, fallbackReason } = await firstLoadingBackend(backends, (backend) => createEngine(files, { ...options, backend }));
  return { engine, fallbackReason };
}

/**
 * Tries `backends` in order: the first that loads is used, with the earlier ones' failures as its fallback
 * reason. When none loads, the last failure is thrown with every backend's failure in its message (as
 * onnxruntime joins them), so the first backend's reason is not lost behind the fallback's. Files that
 * changed after they were verified are refused at once: they fail on every backend.
 */
export async function firstLoadingBackend<T>(backends: readonly OrtBackend[], load: (backend: OrtBackend) => Promise<T>): Promise<{ value: T; fallbackReason: string | null }> {
  const failures: string[] = [];
  for (const backend of backends) {
    try {
      return { value: await load(backend), fallbackReason: failures.length > 0 ? failures.join('; ') : null };
    } catch (e) {
      if (e instanceof IntegrityError || !(e instanceof Error)) throw e;
      failures.push(`${backend}: ${e.message}`);
      if (failures.length === backends.length) {
        if (failures.length > 1) e.message = `no backend could load the model: ${failures.join('; ')}`;
        throw e;
      }
    }
  }
  // Only an empty plan gets here.
  throw new InvalidOptionsError('Invalid option backends: received an empty list; allowed: one or more of "node", "wasm", "webgpu".', { option: 'backends' });
}

/** The engine as the conductor's scorer source. */
export function engineScorerSource(runtime: LocalGuardRuntime): ScorerSource {
  return {
    load: () => loadEngineScorer(runtime),
    fallbackReason: runtime.fallbackReason ?? null,
    ...(runtime.onProgress ? { onProgress: runtime.onProgress } : {}),
  };
}

/** Creates a guard that runs the model in this thread: the core's conductor over the engine loaded here. */
export function createLocalGuard(options: GuardOptions, runtime: LocalGuardRuntime): LocalGuard {
  return createConductor(options, engineScorerSource(runtime));
}
