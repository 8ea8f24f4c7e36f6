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
import { directoryReader, embeddedModelDir, urlReader } from './engine/files-node.js';
import { loadEngineScorer } from './engine/local-guard.js';
import { withManifest, type FileReader } from './engine/model-files.js';

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
}

const NODE_OPTION_KEYS = ['modelDir', 'modelUrl', 'cacheDir', 'backend', 'backends', 'onProgress'] as const satisfies ReadonlyArray<keyof NodeGuardOptions>;
function nodeReader(o: Pick<NodeGuardOptions, 'modelDir' | 'modelUrl' | 'modelManifest' | 'cacheDir'>): FileReader {
  if (o.modelUrl === undefined) {
    const dir = directoryReader(o.modelDir ?? embeddedModelDir());
    return o.modelManifest ? withManifest(dir, o.modelManifest) : dir;
  }
  if (o.modelDir !== undefined) throw new InvalidOptionsError('Invalid options: received both modelDir and modelUrl; give at most one.', { option: 'modelUrl' });
  if (!/^https?:\/\//.test(o.modelUrl)) {
    throw new InvalidOptionsError(`Invalid option modelUrl: received ${JSON.stringify(o.modelUrl)}; allowed: an absolute http(s) URL.`, { option: 'modelUrl' });
  }
  return urlReader(o.modelUrl, { ...(o.cacheDir !== undefined ? { cacheDir: o.cacheDir } : {}), ...(o.modelManifest ? { manifest: o.modelManifest } : {}) });
}

/**
 * Creates a guard that runs in this Node process: the core's conductor over onnxruntime-node, or wasm
 * where the core's planner says so (a worker thread, where terminating a native run aborts the process).
 */
export function createNodeGuard(options: NodeGuardOptions = {}): LocalGuard {
  const { guard, runtime } = splitRuntimeOptions(options, NODE_OPTION_KEYS);
  const { modelManifest: _manifest, ...runtimeOptions } = runtime;
  // Refused now, not at load: a bad backend is the caller's bug.
  const request = checkBackendRequest(backendRequest(options), { isNode: true });
  const reader = nodeReader(options);
  const onProgress = options.onProgress;
  return createConductor(guard, {
    async load() {
      const plan = await planBackends(request, { isNode: true, isWorkerThread: !isMainThread, gpu: undefined });
      const loaded = await loadEngineScorer({ ...runtimeOptions, reader, backends: plan.backends, ...(onProgress ? { onProgress } : {}) });
      return { ...loaded, fallbackReason: [plan.fallbackReason, loaded.fallbackReason].filter(Boolean).join('; ') || null };
    },
    ...(onProgress ? { onProgress } : {}),
  });
}
