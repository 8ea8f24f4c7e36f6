/**
 * EdgeArmor for Node: the in-process guard on onnxruntime-node (onnxruntime-web wasm as fallback, and
 * in worker threads), loading the embedded model (or any model directory) from disk.
 */
import { backendRequest, checkBackendRequest, joinReasons } from './core/backend-plan.js';
import { createConductor, type ConductorGuard } from './core/conductor.js';
import type { GuardOptions } from './core/options.js';
import { splitRuntimeOptions, type ModelRuntimeOptions } from './core/runtime-options.js';
import { DEFAULT_STUCK_GRACE_MS, validateFactoryOptions } from './core/shell-options.js';
import { nodeModelReader } from './engine/files-node.js';
import { loadEngineScorer, type LocalGuardRuntime } from './engine/local-guard.js';
import { loadIsolatedScorer } from './engine/process-scorer.js';
import { planNodeBackends } from './node/backends.js';
import { NODE_OPTIONS, type NodeShellOptions } from './node/options.js';

export { buildManifest, defaultCacheDir, embeddedModelDir, writeModelOptions, type HubTreeEntry } from './engine/files-node.js';
export { pullModel, DEFAULT_HUB_ENDPOINT, type PullOptions, type PullProgress, type PulledModel } from './engine/hub-pull.js';
export { startProxyServer, type ProxyServerOptions, type RunningProxyServer } from './engine/proxy-server.js';
export { createNodeToolPins, filePinStore, PIN_FILE_NAME } from './engine/pins-node.js';
export type { LocalGuard } from './core/conductor.js';

/**
 * Options of {@link createNodeGuard}: the guard's options, the runtime options (shared with createGuard),
 * and its own (where the model is, the backend, isolation); each declared once, what each means in the
 * options tables in docs/options.md (core/option-registry.ts, core/runtime-options.ts, node/options.ts).
 */
export interface NodeGuardOptions extends GuardOptions, ModelRuntimeOptions, NodeShellOptions {}

/** Where createNodeGuard runs its model: in this process, or in a child process. */
export type NodeIsolation = NonNullable<NodeShellOptions['isolation']>;

const NODE_OPTION_KEYS = Object.keys(NODE_OPTIONS.entries) as Array<keyof NodeShellOptions>;

export type { ConductorGuard } from './core/conductor.js';

/**
 * Creates a guard for this Node process: the core's conductor over onnxruntime-node, in a child process
 * with `isolation: 'process'`, else here (wasm where the core's planner says so: in a worker thread,
 * terminating a native run would abort the process).
 */
export function createNodeGuard(options: NodeGuardOptions = {}): ConductorGuard {
  // Refused now, not at load: bad options are the caller's bug.
  validateFactoryOptions(NODE_OPTIONS, options as Record<string, unknown>);
  const { guard, runtime } = splitRuntimeOptions(options, NODE_OPTION_KEYS);
  const { modelManifest: _manifest, ...runtimeOptions } = runtime;
  const request = checkBackendRequest(backendRequest(options), { isNode: true });
  const isolation = options.isolation ?? 'none';
  const reader = nodeModelReader(options);
  const onProgress = options.onProgress;
  const progress = onProgress ? { onProgress } : {};
  // A remote proxy runs no model here, so there is nothing to isolate.
  const inChild = isolation === 'process' && runtimeOptions.remoteProxy === undefined;
  return createConductor(guard, {
    async load() {
      const plan = await planNodeBackends(request, { inChildProcess: inChild });
      const here: LocalGuardRuntime = { ...runtimeOptions, reader, backends: plan.backends, ...progress };
      const location = { modelDir: options.modelDir, modelUrl: options.modelUrl, cacheDir: options.cacheDir, modelManifest: options.modelManifest };
      const isolated = { location, runtime: runtimeOptions, backends: plan.backends, cancelGraceMs: options.stuckWorkerGraceMs ?? DEFAULT_STUCK_GRACE_MS, ...progress };
      const loaded = inChild ? await loadIsolatedScorer(isolated, here) : await loadEngineScorer(here);
      return { ...loaded, fallbackReason: joinReasons(plan.fallbackReason, loaded.fallbackReason) };
    },
    ...progress,
  });
}
