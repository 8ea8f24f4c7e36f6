/**
 * EdgeArmor for Node: the in-process guard on onnxruntime-node (onnxruntime-web wasm as fallback),
 * loading the embedded model (or any model directory) from disk.
 */
import type { GuardOptions } from './core/options.js';
import type { GuardProgress } from './core/guard-api.js';
import { createLocalGuard, type LocalGuard } from './engine/local-guard.js';
import { InvalidOptionsError } from './core/errors.js';
import { directoryReader, embeddedModelDir, urlReader } from './engine/files-node.js';
import { withManifest, type FileReader, type ModelManifest, type ModelVariant } from './engine/model-files.js';
import type { Backend } from './engine/ort-session.js';
import type { ScoringMode } from './engine/engine.js';
import { validateRemoteProxyOptions, type RemoteProxyOptions } from './engine/remote-proxy.js';

export { buildManifest, defaultCacheDir, embeddedModelDir, type HubTreeEntry } from './engine/files-node.js';
export type { ModelManifest } from './engine/model-files.js';
export { validateRemoteProxyOptions, type RemoteProxyOptions } from './engine/remote-proxy.js';
export { startProxyServer, type ProxyServerOptions, type RunningProxyServer } from './engine/proxy-server.js';

/** Options of {@link createNodeGuard}: the guard's options plus where and how to run the model. */
export interface NodeGuardOptions extends GuardOptions {
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
  /** The manifest the model's files must match, when its directory or URL has none (hub models). */
  modelManifest?: ModelManifest;
  /** Where files fetched from `modelUrl` are cached by SHA-256; null disables it. @defaultValue $XDG_CACHE_HOME/edgearmor or ~/.cache/edgearmor */
  cacheDir?: string | null;
  /**
   * Score on a vLLM (OpenAI-compatible completions) server instead of on this machine. Opt-in: the
   * only option that makes the guard use the network. The server must serve a model with
   * `modelDir`'s tokenizer. @defaultValue undefined (the local model)
   */
  remoteProxy?: RemoteProxyOptions;
  /**
   * A Jinja chat template to render guard calls with instead of the model's own, e.g. one that
   * writes tool turns for a model whose template refuses them (Gemma 3's). @defaultValue the model's
   */
  chatTemplate?: string;
  /** @defaultValue 'q4' */
  modelVariant?: ModelVariant;
  /** Backends to try in order. @defaultValue ['node', 'wasm'] */
  backends?: Backend[];
  /** Padded tokens per forward pass on the 'naive' scoring path. @defaultValue 8192 under 'naive'; none under 'auto' */
  maxBatchTokens?: number;
  /**
   * 'prefix' (each shared prefix once: fewest tokens, right for CPUs), 'naive' (every variant in full, batched:
   * fewest passes, right for GPUs; 8x faster than 'prefix' on an H100 through WebGPU, see bench/README.md) or
   * 'auto' ('naive' on WebGPU, in passes of at most 1 GiB by estimate; 'prefix' elsewhere). Same scores either
   * way; the status says which plan runs. @defaultValue 'auto'
   */
  scoring?: ScoringMode;
  onProgress?: (event: GuardProgress) => void;
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
  const { modelDir: _d, modelUrl: _u, modelManifest: _m, cacheDir: _c, modelVariant, backends, maxBatchTokens, scoring, onProgress, remoteProxy, chatTemplate, ...guardOptions } = options;
  return createLocalGuard(guardOptions, {
    reader: nodeReader(options),
    ...(remoteProxy !== undefined ? { remote: validateRemoteProxyOptions(remoteProxy) } : {}),
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    backends: backends ?? ['node', 'wasm'],
    ...(modelVariant ? { variant: modelVariant } : {}),
    ...(maxBatchTokens !== undefined ? { maxBatchTokens } : {}),
    ...(scoring !== undefined ? { scoring } : {}),
    ...(onProgress ? { onProgress } : {}),
  });
}
