/**
 * How the demo pages start the guard. They pass no `worker`: createGuard's default
 * `new Worker(new URL('../worker.js', import.meta.url))` is a pattern Vite bundles, so the app gets
 * the package's own worker entry, and the guard can restart it after a crash.
 */

/** onnxruntime-web's wasm/mjs files, served by the app itself (vite.config.ts), never a CDN. */
export function ortWasmPaths(): string {
  return new URL('ort/', document.baseURI).href;
}

/** The model URL: `?model=` wins, then the build's default (VITE_EDGEARMOR_MODEL_URL). */
export function modelUrlFromPage(params: URLSearchParams): string {
  return params.get('model') ?? (import.meta.env['VITE_EDGEARMOR_MODEL_URL'] as string | undefined) ?? 'models/edgearmor-proxy/';
}
