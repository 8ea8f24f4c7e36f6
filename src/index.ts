/**
 * EdgeArmor: an on-device guard for tool-using LLM agents. The pure core (types, options,
 * attribution, verdicts, MindGuard) plus the in-process guard; `edgearmor/node` adds the Node
 * entry with the embedded model, `edgearmor/worker` the Web Worker side.
 */
export * from './core/index.js';
export * from './core/mindguard/index.js';
export { createLocalGuard, type LocalGuardRuntime } from './engine/local-guard.js';
export type { FileReader, ModelManifest, ModelVariant } from './engine/model-files.js';
export type { ScoringMode } from './core/runtime-options.js';
export { createGuard, DEFAULT_MODEL_URL, type CreateGuardOptions, type WorkerGuard, type WorkerLike } from './page/create-guard.js';
export type { BackendPreference, ModelLocation } from './wire/protocol.js';
export { createBrowserToolPins, indexedDbPinStore, PIN_DATABASE } from './page/pins-browser.js';
export { validateRemoteProxyOptions, type RemoteProxyOptions } from './core/runtime-options.js';
