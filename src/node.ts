/**
 * EdgeArmor for Node: the in-process guard on onnxruntime-node (onnxruntime-web wasm as fallback),
 * loading the embedded model (or any model directory) from disk.
 */
import type { GuardOptions } from './core/options.js';
import type { GuardProgress } from './core/guard-api.js';
import { createLocalGuard, type LocalGuard } from './engine/local-guard.js';
import { InvalidOptionsError } from './core/errors.js';
import { directoryReader, embeddedModelDir, urlReader } from './engine/files-node.js';
import { withManifest, type FileReader } from './engine/model-files.js';
import type { Backend } from './engine/ort-session.js';
import { splitRuntimeOptions, type BackendPreference, type ModelRuntimeOptions } from './engine/runtime-options.js';

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
  backends?: Backend[];
  onProgress?: (event: GuardProgress) => void;
}

const NODE_OPTION_KEYS = ['modelDir', 'modelUrl', 'cacheDir', 'backend', 'backends', 'onProgress'] as const satisfies ReadonlyArray<keyof NodeGuardOptions>;
const NODE_BACKENDS: readonly Backend[] = ['node', 'wasm'];

/** The backends to try in Node for `backend` (or its alias `backends`). */
export function nodeBackends(options: Pick<NodeGuardOptions, 'backend' | 'backends'>): Backend[] {
  const { backend, backends } = options;
  if (backend !== undefined && backends !== undefined) {
    throw new InvalidOptionsError('Invalid options: received both backend and backends; give one (backends is the older spelling of backend).', { option: 'backends' });
  }
  if (backends !== undefined) {
    if (!Array.isArray(backends) || backends.length === 0 || backends.some((b) => !NODE_BACKENDS.includes(b))) {
      throw new InvalidOptionsError(`Invalid option backends: received ${JSON.stringify(backends)}; allowed in Node: a non-empty list of "node", "wasm".`, { option: 'backends', allowed: [...NODE_BACKENDS] });
    }
    return [...backends];
  }
  if (backend === undefined || backend === 'auto') return [...NODE_BACKENDS];
  if (!NODE_BACKENDS.includes(backend as Backend)) {
    throw new InvalidOptionsError(`Invalid option backend: received ${JSON.stringify(backend)} in Node; allowed here: "auto" | "node" | "wasm".`, { option: 'backend', allowed: ['auto', ...NODE_BACKENDS] });
  }
  return [backend as Backend];
}

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

/** Creates a guard that runs in this Node process. */
export function createNodeGuard(options: NodeGuardOptions = {}): LocalGuard {
  const { guard, runtime } = splitRuntimeOptions(options, NODE_OPTION_KEYS);
  const { modelManifest: _manifest, ...runtimeOptions } = runtime;
  return createLocalGuard(guard, {
    ...runtimeOptions,
    reader: nodeReader(options),
    backends: nodeBackends(options),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
}
