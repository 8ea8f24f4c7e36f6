/**
 * EdgeArmor for Node: the in-process guard on onnxruntime-node (onnxruntime-web wasm as fallback),
 * loading the embedded model (or any model directory) from disk.
 */
import type { GuardOptions } from './core/options.js';
import type { GuardProgress } from './core/guard-api.js';
import { createLocalGuard, type LocalGuard } from './engine/local-guard.js';
import { directoryReader, embeddedModelDir } from './engine/files-node.js';
import type { ModelVariant } from './engine/model-files.js';
import type { Backend } from './engine/ort-session.js';
import { validateRemoteProxyOptions, type RemoteProxyOptions } from './engine/remote-proxy.js';

export { embeddedModelDir } from './engine/files-node.js';
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
  /** Padded tokens per forward pass. @defaultValue 8192 */
  maxBatchTokens?: number;
  onProgress?: (event: GuardProgress) => void;
}

/** Creates a guard that runs in this Node process. */
export function createNodeGuard(options: NodeGuardOptions = {}): LocalGuard {
  const { modelDir, modelVariant, backends, maxBatchTokens, onProgress, remoteProxy, chatTemplate, ...guardOptions } = options;
  return createLocalGuard(guardOptions, {
    reader: directoryReader(modelDir ?? embeddedModelDir()),
    ...(remoteProxy !== undefined ? { remote: validateRemoteProxyOptions(remoteProxy) } : {}),
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    backends: backends ?? ['node', 'wasm'],
    ...(modelVariant ? { variant: modelVariant } : {}),
    ...(maxBatchTokens !== undefined ? { maxBatchTokens } : {}),
    ...(onProgress ? { onProgress } : {}),
  });
}
