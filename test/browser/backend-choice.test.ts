/**
 * `backend: 'auto'` on Debian's Chromium, whose only WebGPU adapter is SwiftShader (software): the
 * backend plan reads the page's real adapter and picks WASM, saying why; `backend: 'webgpu'` keeps it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planBackends } from '../../src/core/backend-plan.js';
import type { WebGpuAdapterLike } from '../../src/core/webgpu-adapter.js';
import { CHROMIUM_PATH, launchChromium, watchConsole, type BrowserHandle } from './browser-helpers.js';
import { existsSync } from 'node:fs';
import { requirement } from '../requirements.js';

const SETUP_TIMEOUT_MS = 30_000;

/** The page's `navigator.gpu`, seen from Node: requestAdapter() answers with the adapter's info as plain data. */
function pageGpu(page: Page) {
  return {
    requestAdapter: () =>
      page.evaluate(async (): Promise<WebGpuAdapterLike | null> => {
        const gpu = (navigator as unknown as { gpu?: { requestAdapter(): Promise<(WebGpuAdapterLike & { info: Record<string, unknown> }) | null> } }).gpu;
        const adapter = await gpu?.requestAdapter();
        if (!adapter) return null;
        const info = adapter.info;
        return {
          info: { vendor: String(info['vendor']), architecture: String(info['architecture']), device: String(info['device']), description: String(info['description']), ...(typeof info['isFallbackAdapter'] === 'boolean' ? { isFallbackAdapter: info['isFallbackAdapter'] } : {}) },
          ...(typeof adapter.isFallbackAdapter === 'boolean' ? { isFallbackAdapter: adapter.isFallbackAdapter } : {}),
        };
      }, undefined),
  };
}

describe.skipIf(!requirement(existsSync(CHROMIUM_PATH), `Chromium (${CHROMIUM_PATH})`))("backend 'auto' on Chromium's software WebGPU adapter", () => {
  let server: Server;
  let browser: BrowserHandle;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    // WebGPU needs a secure context: a blank page from 127.0.0.1 is one.
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>gpu</title>'));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    browser = await launchChromium();
    page = await browser.context.newPage();
    errors = watchConsole(page);
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  });

  it('plans WASM for auto and names the software adapter as the reason', async () => {
    const adapter = await pageGpu(page).requestAdapter();
    expect(adapter, 'Chromium with --enable-unsafe-webgpu exposes an adapter').not.toBeNull();
    const plan = await planBackends('auto', { isNode: false, gpu: pageGpu(page) });
    expect(plan.backends).toEqual(['wasm']);
    expect(plan.fallbackReason).toMatch(/^WebGPU: the adapter is (a fallback \(software\) adapter|the software renderer swiftshader).*swiftshader/i);
    expect(errors).toEqual([]);
  });

  it('keeps WebGPU when the caller asks for it', async () => {
    await expect(planBackends('webgpu', { isNode: false, gpu: pageGpu(page) })).resolves.toEqual({ backends: ['webgpu'], fallbackReason: null });
  });
});
