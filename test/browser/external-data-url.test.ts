/**
 * External data by URL in real Chromium: the hub fixture's onnx/model.onnx_data is streamed through its
 * SHA-256 check into a Blob (never one buffer gathered by EdgeArmor), reported per file as it arrives,
 * cached only once verified, and handed to onnxruntime-web; the guard loads it in the worker and scores;
 * onnxruntime-genai's layout (model.onnx.data beside genai_config.json) takes the same path;
 * a tampered model.onnx_data is refused with the file and both hashes named, and nothing is loaded.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileProgressEvent } from '../../src/engine/files-browser.js';
import type { ModelManifest } from '../../src/engine/model-files.js';
import { PageGuardError, startGuardPage, checkInPage } from '../../src/testing.js';
import { findCase } from '../../src/scenarios/index.js';
import { CAN_RUN, keepOffline, launchChromium, ROOT, startDevServer, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';

// The dev server transforms the worker's dependencies on first load (slow on a shared 2-core machine).
const PAGE_LOAD_TIMEOUT_MS = 120_000;
const SETUP_TIMEOUT_MS = 120_000;
const HUB_DIR = fileURLToPath(new URL('../fixtures/tiny-proxy-hub', import.meta.url));
const HUB_URL = '/fixtures/hub-data/';
const TAMPERED_URL = '/fixtures/hub-data-tampered/';
const GENAI_DIR = fileURLToPath(new URL('../fixtures/tiny-proxy-genai', import.meta.url));
const GENAI_URL = '/fixtures/genai/';
const DATA = 'onnx/model.onnx_data';
const manifest = JSON.parse(readFileSync(join(HUB_DIR, 'manifest.json'), 'utf8')) as ModelManifest;

/** The hub fixture with one byte of model.onnx_data flipped: every other file a link to the original. */
function tamperedCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-tampered-'));
  for (const rel of readdirSync(HUB_DIR, { recursive: true, encoding: 'utf8' })) {
    const from = join(HUB_DIR, rel);
    if (rel === 'onnx') mkdirSync(join(dir, rel));
    else if (rel === DATA) {
      const bytes = readFileSync(from);
      bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
      writeFileSync(join(dir, rel), bytes);
    } else symlinkSync(from, join(dir, rel));
  }
  return dir;
}

describe.skipIf(!CAN_RUN)('external data by URL in Chromium', () => {
  let server: DemoServer;
  let browser: BrowserHandle;
  let external: string[];
  let tampered: string;

  beforeAll(async () => {
    tampered = tamperedCopy();
    server = await startDevServer({ serve: { [HUB_URL]: HUB_DIR, [TAMPERED_URL]: tampered, [GENAI_URL]: GENAI_DIR } });
    browser = await launchChromium({ webgpu: false });
    external = await keepOffline(browser.context);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    rmSync(tampered, { recursive: true, force: true });
  });

  it(
    'streams model.onnx_data through its check into a Blob with progress, reads it back from Cache Storage, and fetches a damaged cached copy again',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      await page.goto(`${server.url}harness.html`);
      const result = await page.evaluate(
        async ({ root, base, data }) => {
          // Written as a string so that Vitest does not rewrite this import, which runs in the page (Vite serves the source).
          const load$ = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
          const files = (await load$(`/@fs${root}src/engine/files-browser.ts`)) as typeof import('../../src/engine/files-browser.js');
          const model = (await load$(`/@fs${root}src/engine/model-files.ts`)) as typeof import('../../src/engine/model-files.js');
          const load = async () => {
            const events: FileProgressEvent[] = [];
            const loaded = await model.loadModelFiles(files.createBrowserReader({ baseUrl: base, onProgress: (e) => events.push(e) }), 'fp32');
            const entry = loaded.externalData[0]!;
            const blob = 'blob' in entry ? entry.blob : null;
            const digest = blob ? new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer())) : new Uint8Array();
            return {
              kinds: loaded.externalData.map((d) => [d.path, Object.keys(d).filter((k) => k !== 'path')]),
              sha256: Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''),
              dataEvents: events.filter((e) => e.file === data),
            };
          };
          const first = await load();
          const second = await load();
          // A cached copy with one byte changed: evicted, fetched again, and the load goes through.
          const cache = await caches.open(files.MODEL_CACHE_NAME);
          const url = new URL(data, new URL(base, location.href)).href;
          const bytes = new Uint8Array(await (await cache.match(url))!.arrayBuffer());
          bytes[0] = bytes[0]! ^ 1;
          await cache.put(url, new Response(bytes));
          const third = await load();
          // onnxruntime-web sizes its buffer for a large file from Content-Length: an object URL of a Blob gives it.
          const blob = new Blob([new Uint8Array(12_345)]);
          const objectUrl = URL.createObjectURL(blob);
          const blobLength = (await fetch(objectUrl)).headers.get('content-length');
          URL.revokeObjectURL(objectUrl);
          return { first, second, third, blobLength };
        },
        { root: ROOT.endsWith('/') ? ROOT : `${ROOT}/`, base: HUB_URL, data: DATA },
      );
      const entry = manifest.files[DATA]!;
      for (const load of [result.first, result.second, result.third]) {
        expect(load.kinds).toEqual([['model.onnx_data', ['blob']]]);
        expect(load.sha256).toBe(entry.sha256);
        expect(load.dataEvents.at(-1)).toMatchObject({ type: 'file', file: DATA, loadedBytes: entry.size });
      }
      // More than one event for a 1.3 MB file: progress each MiB as it streams, then the end.
      expect(result.first.dataEvents.length).toBeGreaterThan(1);
      expect(result.first.dataEvents.every((e) => !e.fromCache && e.totalBytes === entry.size)).toBe(true);
      expect(result.second.dataEvents.every((e) => e.fromCache)).toBe(true);
      expect(result.third.dataEvents.some((e) => e.fromCache)).toBe(true);
      expect(result.third.dataEvents.at(-1)!.fromCache).toBe(false);
      expect(result.blobLength).toBe('12345');
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    "reads onnxruntime-genai's layout by URL: the graph genai_config.json names and its model.onnx.data streamed into a Blob",
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      await page.goto(`${server.url}harness.html`);
      const loaded = await page.evaluate(
        async ({ root, base }) => {
          const load$ = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
          const files = (await load$(`/@fs${root}src/engine/files-browser.ts`)) as typeof import('../../src/engine/files-browser.js');
          const model = (await load$(`/@fs${root}src/engine/model-files.ts`)) as typeof import('../../src/engine/model-files.js');
          const m = await model.loadModelFiles(files.createBrowserReader({ baseUrl: base }), 'q4');
          return { onnxPath: m.onnxPath, variant: m.variant, layers: m.config['num_hidden_layers'], data: m.externalData.map((d) => [d.path, 'blob' in d ? d.blob.size : -1]) };
        },
        { root: ROOT.endsWith('/') ? ROOT : `${ROOT}/`, base: GENAI_URL },
      );
      const genaiManifest = JSON.parse(readFileSync(join(GENAI_DIR, 'manifest.json'), 'utf8')) as ModelManifest;
      expect(loaded).toEqual({ onnxPath: 'model.onnx', variant: 'q4', layers: 2, data: [['model.onnx.data', genaiManifest.files['model.onnx.data']!.size]] });
      expect(errors).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'loads the hub layout with external data in the worker and scores a check',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      const status = await startGuardPage(page, { url: `${server.url}harness.html`, modelUrl: HUB_URL, modelVariant: 'fp32', backend: 'wasm' });
      expect(status).toMatchObject({ state: 'ready', backend: 'wasm', model: 'tiny-proxy-hub', variant: 'fp32' });
      const c = findCase('banking', 'poisoning', 1)!;
      const verdict = await checkInPage(page, { messages: c.messages, action: c.action, tools: c.tools });
      expect(verdict.reason).toBe('model');
      expect(verdict.attribution?.variants.length).toBeGreaterThan(1);
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'refuses a tampered model.onnx_data in the worker, naming the file and both hashes, and loads nothing',
    async () => {
      const page = await browser.context.newPage();
      // The harness page reports the failed load on its console; that is the expected outcome here.
      const errors = watchConsole(page, [/integrity|hash mismatch|tamper/i]);
      const refused = startGuardPage(page, { url: `${server.url}harness.html`, modelUrl: TAMPERED_URL, modelVariant: 'fp32', backend: 'wasm' });
      await expect(refused).rejects.toThrow(PageGuardError);
      const error = (await refused.catch((e: unknown) => e)) as PageGuardError;
      expect(error.code).toBe('integrity-mismatch');
      expect(error.message).toMatch(new RegExp(`"${DATA}": expected sha256 ${manifest.files[DATA]!.sha256}, got [0-9a-f]{64}`));
      expect(error.details).toMatchObject({ file: DATA, expected: manifest.files[DATA]!.sha256 });
      const status = await page.evaluate(async () => (globalThis as unknown as { __edgearmorHarness: { status(): Promise<{ ok: boolean; value?: { state: string } }> } }).__edgearmorHarness.status());
      expect(status.value?.state).not.toBe('ready');
      expect(errors).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );
});
