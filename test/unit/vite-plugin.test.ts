/**
 * `edgearmor/vite` in a fresh app: the dev server serves onnxruntime-web's files and the model with the
 * cross-origin isolation headers, refuses paths outside them, and a production build holds one copy of each
 * runtime file (none inlined into a bundle) and the model.
 */
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { build, createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgearmor, ORT_RUNTIME_FILES } from '../../src/vite.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BUILD_TIMEOUT_MS = 120_000;

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(dir, f)).isFile());
}

describe('the edgearmor Vite plugin', () => {
  let app: string;
  let server: ViteDevServer;
  let base: string;

  beforeAll(async () => {
    app = mkdtempSync(join(tmpdir(), 'edgearmor-vite-app-'));
    writeFileSync(join(app, 'index.html'), '<!doctype html><title>app</title><script type="module" src="./main.ts"></script>\n');
    writeFileSync(
      join(app, 'main.ts'),
      "import { createGuard } from 'edgearmor';\nconst guard = createGuard({ modelUrl: '/models/edgearmor-proxy/', wasmPaths: new URL('/ort/', location.href).href });\nvoid guard.ready.then((s) => console.log(s.backend));\n",
    );
    server = await createServer({
      root: app,
      configFile: false,
      logLevel: 'error',
      plugins: [edgearmor()],
      resolve: { alias: { edgearmor: join(ROOT, 'src/index.ts') } },
      server: { port: 0, host: '127.0.0.1', hmr: false },
      optimizeDeps: { noDiscovery: true, include: [] },
    });
    await server.listen();
    base = server.resolvedUrls!.local[0]!.replace(/\/$/, '');
  });

  afterAll(async () => {
    await server?.close();
    rmSync(app, { recursive: true, force: true });
  });

  it('serves the wasm runtime and the model with the headers wasm threads need', async () => {
    const wasm = await fetch(`${base}/ort/ort-wasm-simd-threaded.wasm`);
    expect(wasm.status).toBe(200);
    expect(wasm.headers.get('content-type')).toBe('application/wasm');
    expect(wasm.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(wasm.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
    expect((await wasm.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
    const manifest = await fetch(`${base}/models/edgearmor-proxy/manifest.json`);
    expect(manifest.status).toBe(200);
    expect(await manifest.json()).toHaveProperty('files');
    const page = await fetch(`${base}/`);
    expect(page.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
  });

  it('serves only onnxruntime-web runtime files and nothing outside the model directory', async () => {
    // Vite answers unknown paths with the app's index.html; what matters is that onnxruntime's other files are not served.
    expect(await (await fetch(`${base}/ort/ort.node.min.js`)).text()).toMatch(/^<!doctype html>/i);
    const escaped = await fetch(`${base}/models/edgearmor-proxy/..%2F..%2F..%2Fpackage.json`);
    expect(await escaped.text()).not.toContain('"name": "edgearmor"');
  });

  it(
    'builds one copy of each runtime file beside the bundle, none inlined, and only the model files the guard reads',
    async () => {
      const outDir = join(app, 'dist');
      await build({ root: app, configFile: false, logLevel: 'error', plugins: [edgearmor()], resolve: { alias: { edgearmor: join(ROOT, 'src/index.ts') } }, build: { outDir } });
      const out = files(outDir);
      const wasm = out.filter((f) => f.endsWith('.wasm'));
      expect(wasm.sort()).toEqual(ORT_RUNTIME_FILES.filter((f) => f.endsWith('.wasm')).map((f) => join('ort', f)).sort());
      // Of the model, exactly what the guard reads for q4: not the fp32 weights, the model card or the training logs.
      const model = out.filter((f) => f.startsWith(join('models', 'edgearmor-proxy'))).map((f) => relative(join('models', 'edgearmor-proxy'), f));
      expect(model.sort()).toEqual(['config.json', 'manifest.json', join('onnx', 'model_q4.onnx'), 'tokenizer.json', 'tokenizer_config.json']);
      // No bundle carries the runtime inline (the extern-wasm condition): every JS asset stays small.
      const js = out.filter((f) => f.endsWith('.js') && !f.startsWith('ort'));
      expect(js.length).toBeGreaterThan(0);
      for (const f of js) expect(statSync(join(outDir, f)).size, relative(outDir, join(outDir, f))).toBeLessThan(8_000_000);
    },
    BUILD_TIMEOUT_MS,
  );
});
