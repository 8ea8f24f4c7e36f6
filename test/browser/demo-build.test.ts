/**
 * The production build (`vite build` into dist-demo/, served by `vite preview`) in Chromium without
 * WebGPU: the guard falls back to WASM and says why, the demo works offline and from the keyboard,
 * and a reload reads the model from Cache Storage instead of the network.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAN_RUN, keepOffline, launchChromium, PAGE_MODEL_URL, startBuiltDemo, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';

// vite build of the demo and its worker on a shared 2-core machine.
const BUILD_TIMEOUT_MS = 180_000;
const PAGE_TIMEOUT_MS = 90_000;

describe.skipIf(!CAN_RUN)('the built demo (vite build + preview) in Chromium without WebGPU', () => {
  let server: DemoServer;
  let browser: BrowserHandle;
  let external: string[];

  beforeAll(async () => {
    server = await startBuiltDemo();
    browser = await launchChromium({ webgpu: false });
    external = await keepOffline(browser.context);
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it(
    'falls back to WASM with the reason shown, plays travel / injection from the keyboard, offline, renders the MindGuard graph for tool poisoning, and reloads the model from Cache Storage',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      const modelRequests: string[] = [];
      page.on('request', (r) => {
        if (r.url().endsWith('.onnx')) modelRequests.push(r.url());
      });
      await page.goto(`${server.url}?model=${encodeURIComponent(PAGE_MODEL_URL)}&threads=1`);
      await page.waitForSelector('body[data-state="ready"]', { timeout: PAGE_TIMEOUT_MS });
      await expect(page.locator('#backend-name').textContent()).resolves.toBe('WASM');
      const backendText = (await page.locator('#backend').textContent()) ?? '';
      expect(backendText).toMatch(/^WASM — WebGPU: navigator\.gpu/);
      // The panel says why once (it used to read "not WebGPU because WebGPU: ...").
      expect(backendText.match(/WebGPU/g)).toHaveLength(1);
      expect(modelRequests.length).toBe(1);

      await page.selectOption('#domain', 'travel');
      await page.selectOption('#variant', 'injection');
      await page.focus('#load-scenario');
      await page.keyboard.press('Enter');
      await page.focus('#run');
      await page.keyboard.press('Enter');
      await page.waitForSelector('body[data-run="done"]', { timeout: PAGE_TIMEOUT_MS });
      const decision = await page.getAttribute('#verdict', 'data-decision');
      // The demo opens on travel / injection, seed 1, which the embedded model blocks (test/engine/demo-cases.test.ts).
      expect(decision).toBe('block');
      const shown = await page.evaluate(() => (globalThis as unknown as { __edgearmorDemo: { lastVerdict: { decision: string } } }).__edgearmorDemo.lastVerdict.decision);
      expect(decision).toBe(shown);
      await expect(page.locator('#chart svg title').first().textContent()).resolves.toMatch(/log-probability/);
      // Each group of bars has its own dashed flag line (tool results: twice the user's delta minus tau), named in the key with tau.
      await expect(page.locator('#chart .flag-line title').first().textContent()).resolves.toMatch(/^flag line, /);
      await expect(page.locator('#chart p.legend').textContent()).resolves.toMatch(/a bar past its group's line is flagged\..*\(τ = -0\.100\)/);

      // Tool poisoning: the MindGuard graph and heatmap, when the model exports attention.
      await page.selectOption('#variant', 'poisoning');
      await page.click('#load-scenario');
      await page.click('#run');
      await page.waitForSelector('body[data-run="done"]', { timeout: PAGE_TIMEOUT_MS });
      const attention = await page.evaluate(() => (globalThis as unknown as { __edgearmorDemo: { status: { attention: boolean } } }).__edgearmorDemo.status.attention);
      if (attention) {
        await expect(page.locator('#mindguard svg[role="img"]').count()).resolves.toBe(1);
        await expect(page.locator('#mindguard table.heatmap tbody tr').count()).resolves.toBeGreaterThan(0);
      }
      await expect(page.locator('#chart').textContent()).resolves.toMatch(/description/);

      modelRequests.length = 0;
      await page.reload();
      await page.waitForSelector('body[data-state="ready"]', { timeout: PAGE_TIMEOUT_MS });
      expect(modelRequests).toEqual([]);
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_TIMEOUT_MS * 2,
  );
});
