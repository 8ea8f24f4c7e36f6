/**
 * `edgearmor`: the guard for a page. Everything `edgearmor/core` exports, plus `createGuard` (the model in
 * a Web Worker) and the browser's tool-pin store. Node adds `edgearmor/node`; the list is docs/api.md.
 */
export * from './core/index.js';
export { createGuard, DEFAULT_MODEL_URL, type CreateGuardOptions, type WorkerGuard, type WorkerLike } from './page/create-guard.js';
export { createBrowserToolPins, indexedDbPinStore, PIN_DATABASE } from './page/pins-browser.js';
