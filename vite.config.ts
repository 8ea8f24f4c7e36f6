/**
 * The demo app (src/demo): `npm start` serves it, `npm run build` writes dist-demo/, `npm run preview` serves that.
 *
 * Everything the page needs comes from the app's own origin: onnxruntime-web's wasm/mjs files are
 * served under /ort/ (never a CDN), the model under models/ (public/) or, before the embedded model
 * exists, the random-weight dev model (.dev-model/) under /dev-model/. COOP/COEP make the page
 * cross-origin isolated so onnxruntime-web may use wasm threads.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { cp, mkdir, rm } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';
import { copyModelFiles } from './src/vite.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));
const ORT_DIST = resolve(ROOT, 'node_modules/onnxruntime-web/dist');
const DEV_MODEL_DIR = resolve(ROOT, '.dev-model');
const EMBEDDED_MANIFEST = resolve(ROOT, 'public/models/edgearmor-proxy/manifest.json');

/** The onnxruntime-web runtime files the app serves: the wasm-only build, and the WebGPU one (asyncify). */
export const ORT_FILES = ['', '.asyncify'].flatMap((b) => [`ort-wasm-simd-threaded${b}.mjs`, `ort-wasm-simd-threaded${b}.wasm`]);

/** Headers that make the page cross-origin isolated (SharedArrayBuffer, wasm threads). */
export const ISOLATION_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
} as const;

/** The demo's default model URL: EDGEARMOR_MODEL_URL, else the embedded model when built, else the dev model. */
export function defaultModelUrl(): string {
  const fromEnv = process.env['EDGEARMOR_MODEL_URL'];
  if (fromEnv) return fromEnv;
  return existsSync(EMBEDDED_MANIFEST) || !existsSync(DEV_MODEL_DIR) ? 'models/edgearmor-proxy/' : '/dev-model/';
}

const TYPES: Record<string, string> = {
  '.wasm': 'application/wasm',
  '.mjs': 'text/javascript',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.onnx': 'application/octet-stream',
};

/** A middleware serving files of `dir` under the URL prefix `prefix`, raw (Vite must not transform ORT's .mjs). */
export function staticDir(prefix: string, dir: string, allow?: (file: string) => boolean) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const path = decodeURIComponent((req.url ?? '').split('?')[0] ?? '');
    if (!path.startsWith(prefix)) return next();
    const rel = path.slice(prefix.length);
    const file = normalize(join(dir, rel));
    if (!file.startsWith(dir + sep) || (allow && !allow(rel)) || !existsSync(file) || !statSync(file).isFile()) return next();
    res.setHeader('Content-Type', TYPES[extname(file)] ?? 'application/octet-stream');
    res.setHeader('Content-Length', String(statSync(file).size));
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
    createReadStream(file).pipe(res);
  };
}

/** Serves onnxruntime-web's runtime under /ort/ in dev and preview, and copies it into the build. */
function ortRuntime(): Plugin {
  let outDir = '';
  return {
    name: 'edgearmor-ort-runtime',
    configResolved(config) {
      outDir = config.build.outDir;
    },
    configureServer(server) {
      server.middlewares.use(staticDir('/ort/', ORT_DIST, (f) => ORT_FILES.includes(f)));
    },
    configurePreviewServer(server) {
      server.middlewares.use(staticDir('/ort/', ORT_DIST, (f) => ORT_FILES.includes(f)));
    },
    async writeBundle() {
      await mkdir(join(outDir, 'ort'), { recursive: true });
      await Promise.all(ORT_FILES.map((f) => cp(join(ORT_DIST, f), join(outDir, 'ort', f))));
    },
    // Vite copies public/ whole; of the embedded model the demo ships only what the guard reads for q4.
    async closeBundle() {
      const built = join(outDir, 'models/edgearmor-proxy');
      if (!existsSync(EMBEDDED_MANIFEST) || !existsSync(built)) return;
      await rm(built, { recursive: true });
      await copyModelFiles(dirname(EMBEDDED_MANIFEST), built, 'q4');
    },
  };
}

/** Serves the random-weight dev model (git-ignored, never built into dist-demo) under /dev-model/. */
function devModel(): Plugin {
  return {
    name: 'edgearmor-dev-model',
    configureServer(server) {
      server.middlewares.use(staticDir('/dev-model/', DEV_MODEL_DIR));
    },
    configurePreviewServer(server) {
      server.middlewares.use(staticDir('/dev-model/', DEV_MODEL_DIR));
    },
  };
}

export default defineConfig({
  root: resolve(ROOT, 'src/demo'),
  publicDir: resolve(ROOT, 'public'),
  // Relative URLs, so the built demo works under any path.
  base: './',
  define: {
    'import.meta.env.VITE_EDGEARMOR_MODEL_URL': JSON.stringify(defaultModelUrl()),
  },
  resolve: {
    // onnxruntime-web's "extern wasm" builds load ort-wasm-*.mjs from wasmPaths (/ort/) instead of inlining it.
    conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions],
    alias: {
      // The engine imports onnxruntime-node only for the Node backend, which browsers never select.
      'onnxruntime-node': resolve(ROOT, 'src/browser-stubs/onnxruntime-node.ts'),
    },
  },
  optimizeDeps: {
    // Listed up front: the dependency scanner does not follow `new Worker(new URL(...))`, and a late
    // discovery reloads the page mid-load. The page imports no engine module (docs/architecture.md), so
    // what only the worker's engine imports (protobufjs, for the attention adapter) must be listed too.
    include: ['@huggingface/tokenizers', '@huggingface/jinja', 'valibot', 'onnxruntime-web/wasm', 'onnxruntime-web/webgpu', 'protobufjs/minimal.js'],
  },
  worker: { format: 'es' },
  server: { host: '127.0.0.1', headers: ISOLATION_HEADERS, strictPort: false },
  preview: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  build: {
    outDir: resolve(ROOT, 'dist-demo'),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      input: {
        main: resolve(ROOT, 'src/demo/index.html'),
        harness: resolve(ROOT, 'src/demo/harness.html'),
      },
    },
  },
  plugins: [ortRuntime(), devModel()],
});
