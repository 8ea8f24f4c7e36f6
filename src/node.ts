/**
 * EdgeArmor for Node: the in-process guard on onnxruntime-node (onnxruntime-web wasm as fallback, and
 * in worker threads), loading the embedded model (or any model directory) from disk.
 */
import { isMainThread } from 'node:worker_threads';
import { backendRequest, checkBackendRequest, planBackends, type OrtBackend } from './core/backend-plan.js';
import { createConductor, type LocalGuard } from './core/conductor.js';
import { InvalidOptionsError } from './core/errors.js';
import type { GuardProgress } from './core/guard-api.js';
import type { GuardOptions } from './core/options.js';
import { splitRuntimeOptions, type BackendPreference, type ModelRuntimeOptions } from './core/runtime-options.js';
import { nodeModelReader } from './engine/files-node.js';
import { loadEngineScorer, type LocalGuardRuntime } from './engine/local-guard.js';
import { loadIsolatedScorer } from './engine/process-scorer.js';

export { buildManifest, defaultCacheDir, embeddedModelDir, writeModelOptions, type HubTreeEntry } from './engine/files-node.js';
export type { ModelManifest } from './engine/model-files.js';
export { validateRemoteProxyOptions, type RemoteProxyOptions } from './engine/remote-proxy.js';
export { startProxyServer, type ProxyServerOptions, type RunningProxyServer } from './engine/proxy-server.js';

/** Options of {@link createNodeGuard}: the guard's options, the runtime options (shared with createGuard), and where the model is. */
export interface NodeGuardOptions extends GuardOptions, ModelRuntimeOptions {
  /**
   * A model directory in the transformers.js layout with a manifest.json; with `remoteProxy`, the
   * proxy's tokenizer and config (its weights are not read). @defaultValue the embedded model
   */
  modelDir?: string;
  /**
   * The model's URL instead of a directory (e.g. `https://huggingface.co/<repo>/resolve/<revision>/`);
   * fetched files are cached in `cacheDir`. Opt-in network use at load time only.
   */
  modelUrl?: string;
  /** Where files fetched from `modelUrl` are cached by SHA-256; null disables it. @defaultValue $XDG_CACHE_HOME/edgearmor or ~/.cache/edgearmor */
  cacheDir?: string | null;
  /** The backend to run on, as in createGuard: 'auto' tries onnxruntime-node, then wasm. @defaultValue 'auto' */
  backend?: BackendPreference;
  /** Alias of `backend` kept for existing callers: the backends to try, in order (e.g. ['node', 'wasm']). Give one of the two. */
  backends?: OrtBackend[];
  onProgress?: (event: GuardProgress) => void;
  /**
   * Where the model runs. 'process': in a child process (status.backend 'node-process'), so the host's
   * event loop stays free during a check and a native crash or kill costs one check (answered by the
   * failure policy), not the host; the next check starts a new child. Where no child can be started,
   * wasm runs in this process and `status.fallbackReason` says why. 'none': in this process.
   * @defaultValue 'none'
   */
  isolation?: NodeIsolation;
}

/** Where createNodeGuard runs its model: in this process, or in a child process. */
export type NodeIsolation = 'none' | 'process';

const NODE_OPTION_KEYS = ['modelDir', 'modelUrl', 'cacheDir', 'backend', 'backends', 'onProgress', 'isolation'] as const satisfies ReadonlyArray<keyof NodeGuardOptions>;
const ISOLATIONS: readonly NodeIsolation[] = ['none', 'process'];

/**
 * Creates a guard for this Node process: the core's conductor over onnxruntime-node, in a child process
 * with `isolation: 'process'`, else here (wasm where the core's planner says so: in a worker thread,
 * terminating a native run would abort the process).
 */
export function createNodeGuard(options: NodeGuardOptions = {}): LocalGuard {
  const { guard, runtime } = splitRuntimeOptions(options, NODE_OPTION_KEYS);
  const { modelManifest: _manifest, ...runtimeOptions } = runtime;
  // Refused now, not at load: a bad backend is the caller's bug.
  const request = checkBackendRequest(backendRequest(options), { isNode: true });
  const isolation = options.isolation ?? 'none';
  if (!ISOLATIONS.includes(isolation)) {
    throw new InvalidOptionsError(`Invalid option isolation: received ${JSON.stringify(isolation)}; allowed: "none" | "process".`, { option: 'isolation', allowed: [...ISOLATIONS] });
  }
  const reader = nodeModelReader(options);
  const onProgress = options.onProgress;
  const progress = onProgress ? { onProgress } : {};
  // A remote proxy runs no model here, so there is nothing to isolate.
  const inChild = isolation === 'process' && runtimeOptions.remoteProxy === undefined;
  return createConductor(guard, {
    async load() {
      // A child process is a main thread: onnxruntime-node is safe there even when this is a worker thread.
      const plan = await planBackends(request, { isNode: true, isWorkerThread: !inChild && !isMainThread, gpu: undefined });
      const here: LocalGuardRuntime = { ...runtimeOptions, reader, backends: plan.backends, ...progress };
      const location = { modelDir: options.modelDir, modelUrl: options.modelUrl, cacheDir: options.cacheDir, modelManifest: options.modelManifest };
      const loaded = inChild ? await loadIsolatedScorer({ location, runtime: runtimeOptions, backends: plan.backends, ...progress }, here) : await loadEngineScorer(here);
      return { ...loaded, fallbackReason: [plan.fallbackReason, loaded.fallbackReason].filter(Boolean).join('; ') || null };
    },
    ...progress,
  });
}
