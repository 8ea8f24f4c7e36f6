/**
 * `edgearmor/vite`: one plugin that makes a Vite app ready for the guard.
 *
 * - serves the embedded model (from this package) under `modelBase` and onnxruntime-web's runtime under
 *   `ortBase`, in `vite` and `vite preview`, and copies both into the build (of the model, only the files
 *   the guard reads for `modelVariant`);
 * - resolves onnxruntime-web with its `onnxruntime-web-use-extern-wasm` condition, so the 20+ MB wasm is
 *   loaded from `ortBase` at run time and never inlined into a bundle (one copy of each runtime file);
 * - replaces onnxruntime-node (the Node backend, never selected in a browser) with a stub that throws;
 * - sets the COOP/COEP headers that make the page cross-origin isolated, which wasm threads need;
 * - bundles workers as ES modules and pre-bundles the worker's dependencies.
 *
 * @example
 * ```ts
 * // vite.config.ts
 * import { defineConfig } from 'vite';
 * import { edgearmor } from 'edgearmor/vite';
 * export default defineConfig({ plugins: [edgearmor()] });
 * // the page
 * import { createGuard } from 'edgearmor';
 * const guard = createGuard({ modelUrl: '/models/edgearmor-proxy/', wasmPaths: new URL('/ort/', location.href).href });
 * ```
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { cp, mkdir, readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, type Plugin, type UserConfig } from 'vite';
import type { ModelManifest, ModelVariant } from './core/runtime-options.js';
import { filesForVariant, isGenaiLayout, isModelVariant, VARIANT_FILES } from './engine/model-files.js';

/** Options of {@link edgearmor}. */
export interface EdgeArmorViteOptions {
  /** The URL path the model directory is served under. @defaultValue '/models/edgearmor-proxy/' */
  modelBase?: string;
  /** The model directory to serve. @defaultValue this package's embedded model */
  modelDir?: string;
  /** The URL path onnxruntime-web's files are served under (give it to createGuard as `wasmPaths`). @defaultValue '/ort/' */
  ortBase?: string;
  /** Set COOP/COEP on the dev and preview servers (wasm threads need cross-origin isolation). @defaultValue true */
  isolation?: boolean;
  /** The weights variant the app loads (createGuard's `modelVariant`): a build ships only its files. @defaultValue 'q4' */
  modelVariant?: ModelVariant;
}

/**
 * Copies into `target` the files of the model in `modelDir` that a guard reads for `variant` (manifest,
 * config, tokenizer, guard-options.json, that variant's weights), not the other variants, the model card or
 * training logs; returns their paths.
 */
export async function copyModelFiles(modelDir: string, target: string, variant: ModelVariant = 'q4'): Promise<string[]> {
  const manifestPath = join(modelDir, 'manifest.json');
  if (!existsSync(manifestPath)) throw new Error(`edgearmor/vite: ${manifestPath} is missing; a model directory needs its manifest (edgearmor manifest <dir>)`);
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as ModelManifest;
  // onnxruntime-genai's layout holds one build, whatever the variant asked for (model-files.ts).
  if (!isModelVariant(variant) || (manifest.files[VARIANT_FILES[variant]] === undefined && !isGenaiLayout(Object.keys(manifest.files), variant))) {
    throw new Error(`edgearmor/vite: modelVariant ${JSON.stringify(variant)} is not in ${manifestPath}; it lists: ${Object.keys(manifest.files).join(', ')}`);
  }
  const files = filesForVariant(manifest, variant);
  await Promise.all(files.map(async (f) => {
    await mkdir(dirname(join(target, f)), { recursive: true });
    await cp(join(modelDir, f), join(target, f));
  }));
  return files;
}

/** onnxruntime-web's runtime files: the wasm-only build and the WebGPU one (asyncify, which transformers.js's onnxruntime-web/webgpu loads). */
export const ORT_RUNTIME_FILES: readonly string[] = ['', '.asyncify'].flatMap((b) => [`ort-wasm-simd-threaded${b}.mjs`, `ort-wasm-simd-threaded${b}.wasm`]);

/** Headers that make a page cross-origin isolated (SharedArrayBuffer, wasm threads). */
export const CROSS_ORIGIN_ISOLATION_HEADERS = Object.freeze({
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
});

const TYPES: Record<string, string> = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.json': 'application/json', '.onnx': 'application/octet-stream' };

/** The embedded model directory inside this package. */
export function embeddedModelDirectory(): string {
  return fileURLToPath(new URL('../public/models/edgearmor-proxy/', import.meta.url));
}

/** The browser stand-in for onnxruntime-node: dist/browser-stubs/*.js in the package, the .ts source when run from the repository. */
function nodeStubFile(): string {
  const js = fileURLToPath(new URL('./browser-stubs/onnxruntime-node.js', import.meta.url));
  return existsSync(js) ? js : js.replace(/\.js$/, '.ts');
}

function ortDistDirectory(): string {
  // onnxruntime-web's Node entry lives in its dist/, beside the runtime files.
  return dirname(createRequire(import.meta.url).resolve('onnxruntime-web'));
}

function withSlashes(base: string): string {
  return `${base.startsWith('/') ? '' : '/'}${base}${base.endsWith('/') ? '' : '/'}`;
}

function serve(prefix: string, dir: string, allow: (file: string) => boolean, isolation: boolean) {
  const root = normalize(dir);
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const path = decodeURIComponent((req.url ?? '').split('?')[0] ?? '');
    if (!path.startsWith(prefix)) return next();
    const rel = path.slice(prefix.length);
    const file = normalize(join(root, rel));
    if (!file.startsWith(root.endsWith(sep) ? root : root + sep) || !allow(rel) || !existsSync(file) || !statSync(file).isFile()) return next();
    res.setHeader('Content-Type', TYPES[extname(file)] ?? 'application/octet-stream');
    res.setHeader('Content-Length', String(statSync(file).size));
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    if (isolation) for (const [k, v] of Object.entries(CROSS_ORIGIN_ISOLATION_HEADERS)) res.setHeader(k, v);
    // Served raw: Vite must not transform onnxruntime's .mjs files.
    createReadStream(file).pipe(res);
  };
}

/** The Vite plugin: serves and builds the model and onnxruntime-web's files, with the headers threads need. */
export function edgearmor(options: EdgeArmorViteOptions = {}): Plugin {
  const modelBase = withSlashes(options.modelBase ?? '/models/edgearmor-proxy/');
  const ortBase = withSlashes(options.ortBase ?? '/ort/');
  const modelDir = options.modelDir ?? embeddedModelDirectory();
  const isolation = options.isolation ?? true;
  const modelVariant = options.modelVariant ?? 'q4';
  const ortDir = ortDistDirectory();
  const headers = isolation ? { ...CROSS_ORIGIN_ISOLATION_HEADERS } : {};
  const middlewares = () => [serve(ortBase, ortDir, (f) => ORT_RUNTIME_FILES.includes(f), isolation), serve(modelBase, modelDir, () => true, isolation)];
  let outDir = '';
  return {
    name: 'edgearmor',
    config(): UserConfig {
      return {
        // The extern-wasm build loads ort-wasm-*.mjs and .wasm from wasmPaths instead of bundling them.
        resolve: {
          conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions],
          // An alias, not a resolveId hook: aliases also apply to worker bundles, which do not run the app's plugins.
          alias: { 'onnxruntime-node': nodeStubFile() },
        },
        // Listed up front: the dependency scanner does not follow `new Worker(new URL(...))`, and a late discovery
        // reloads the page mid-load. protobufjs is CommonJS: served unbundled, the worker's default import of it
        // fails ("does not provide an export named 'default'"); onnxruntime-node is the stub above.
        optimizeDeps: {
          include: ['@huggingface/tokenizers', '@huggingface/jinja', 'valibot', 'onnxruntime-web/wasm', 'onnxruntime-web/webgpu', 'edgearmor > protobufjs/minimal.js', 'onnxruntime-node'],
        },
        worker: { format: 'es' },
        server: { headers },
        preview: { headers },
        build: { target: 'es2022' },
      };
    },
    configResolved(config) {
      outDir = config.build.outDir;
    },
    configureServer(server) {
      for (const m of middlewares()) server.middlewares.use(m);
    },
    configurePreviewServer(server) {
      for (const m of middlewares()) server.middlewares.use(m);
    },
    async writeBundle() {
      const ortOut = join(outDir, ...ortBase.split('/').filter(Boolean));
      await mkdir(ortOut, { recursive: true });
      await Promise.all(ORT_RUNTIME_FILES.map((f) => cp(join(ortDir, f), join(ortOut, f))));
      await copyModelFiles(modelDir, join(outDir, ...modelBase.split('/').filter(Boolean)), modelVariant);
    },
  };
}

export default edgearmor;
