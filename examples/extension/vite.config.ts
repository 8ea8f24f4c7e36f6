/**
 * Builds the MV3 extension into examples/extension/dist/ (load it unpacked): the offscreen document
 * and its guard worker bundled, the static files (manifest, service worker, content script) copied,
 * onnxruntime-web's runtime under ort/ and the model under models/edgearmor-proxy/.
 *
 * The model copied (its q4 files) is EDGEARMOR_MODEL_DIR, else the embedded model when it exists, else the dev model.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';
import { copyModelFiles } from '../../src/vite.js';
import { ORT_FILES } from '../../vite.config.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(HERE, '../..');
const EMBEDDED = resolve(ROOT, 'public/models/edgearmor-proxy');

/** The model directory the extension ships. */
export function extensionModelDir(): string {
  const fromEnv = process.env['EDGEARMOR_MODEL_DIR'];
  if (fromEnv) return resolve(fromEnv);
  return existsSync(join(EMBEDDED, 'manifest.json')) ? EMBEDDED : resolve(ROOT, '.dev-model');
}

function copyRuntime(): Plugin {
  let outDir = '';
  return {
    name: 'edgearmor-extension-files',
    configResolved(config) {
      outDir = config.build.outDir;
    },
    async writeBundle() {
      await mkdir(join(outDir, 'ort'), { recursive: true });
      await Promise.all(ORT_FILES.map((f) => cp(join(ROOT, 'node_modules/onnxruntime-web/dist', f), join(outDir, 'ort', f))));
      // Only what the guard reads for the q4 weights the extension loads: not fp32, the model card or training logs.
      await copyModelFiles(extensionModelDir(), join(outDir, 'models/edgearmor-proxy'), 'q4');
    },
  };
}

export default defineConfig({
  root: HERE,
  base: './',
  publicDir: resolve(HERE, 'static'),
  resolve: {
    conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions],
    alias: { 'onnxruntime-node': resolve(ROOT, 'src/browser-stubs/onnxruntime-node.ts') },
  },
  worker: { format: 'es' },
  build: {
    outDir: resolve(HERE, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    // MV3 extension pages forbid inline scripts; keep every script a file.
    modulePreload: false,
    chunkSizeWarningLimit: 4096,
    rollupOptions: { input: { offscreen: resolve(HERE, 'offscreen.html') } },
  },
  plugins: [copyRuntime()],
});
