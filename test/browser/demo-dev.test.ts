/**
 * The demo under `vite` (the dev server), in the system Chromium: a scripted scenario gets a
 * rendered verdict whose panels read as they should at 1280 x 800 (demo-panels.ts; demo-layout.test.ts: the
 * layout at 1280 and 420 px), the browser's log-probs equal the Node engine's on WASM (webgpu-dev.test.ts: on
 * software WebGPU), nothing leaves 127.0.0.1, a tampered model file is refused, a crashed worker is restarted, and a
 * hub-layout model (external data, attention adapter) loads in the worker, and so does a fused-kernel one
 * (GroupQueryAttention, MatMulNBits; test/fixtures/tiny-proxy-gqa).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createNodeGuard } from '../../src/node.js';
import type { Verdict } from '../../src/core/verdict.js';
import type { GuardStatus } from '../../src/core/guard-api.js';
import type { LocalGuard } from '../../src/engine/local-guard.js';
import { checkInPage, PageGuardError, startGuardPage } from '../../src/testing.js';
import { findCase } from '../../src/scenarios/index.js';
import { createEngine } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { startProxyServer } from '../../src/engine/proxy-server.js';
import { CAN_RUN, expectClose, keepOffline, launchChromium, MODEL_DIR, PAGE_MODEL_URL, startDevServer, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';
import { DESKTOP, expectBlockedInjectionPanels, SHOTS } from './demo-panels.js';

// First page load transforms the worker's dependencies on the dev server (slow on a shared 2-core machine).
const PAGE_LOAD_TIMEOUT_MS = 120_000;
const SETUP_TIMEOUT_MS = 120_000;
const HUB_FIXTURE_DIR = fileURLToPath(new URL('../fixtures/tiny-proxy-hub', import.meta.url));
const HUB_FIXTURE_URL = '/fixtures/tiny-proxy-hub/';
const GQA_FIXTURE_DIR = fileURLToPath(new URL('../fixtures/tiny-proxy-gqa', import.meta.url));
const GQA_FIXTURE_URL = '/fixtures/tiny-proxy-gqa/';

describe.skipIf(!CAN_RUN)('the demo on the Vite dev server in Chromium', () => {
  let server: DemoServer;
  let browser: BrowserHandle;
  let external: string[];
  let node: LocalGuard;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startDevServer({ serve: { [HUB_FIXTURE_URL]: HUB_FIXTURE_DIR, [GQA_FIXTURE_URL]: GQA_FIXTURE_DIR } });
    browser = await launchChromium();
    external = await keepOffline(browser.context);
    node = createNodeGuard({ modelDir: MODEL_DIR, backends: ['node'] });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await node?.dispose();
    await browser?.close();
    await server?.close();
  });

  async function openDemo(query: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    const errors = watchConsole(page);
    await page.goto(`${server.url}?model=${encodeURIComponent(PAGE_MODEL_URL)}&threads=1&${query}`);
    return { page, errors };
  }

  it(
    'loads offline, plays travel / injection and renders a verdict that matches the Node engine within 1e-3 (WASM forced)',
    async () => {
      const { page, errors } = await openDemo('backend=wasm');
      await page.setViewportSize(DESKTOP);
      await page.waitForSelector('body[data-state="ready"]', { timeout: PAGE_LOAD_TIMEOUT_MS });
      await expect(page.locator('#backend-name').textContent()).resolves.toBe('WASM');
      await page.selectOption('#domain', 'travel');
      await page.selectOption('#variant', 'injection');
      await page.click('#load-scenario');
      await page.screenshot({ path: join(SHOTS, `injection-loaded-${DESKTOP.width}x${DESKTOP.height}.png`) });
      await page.click('#run');
      await page.waitForSelector('body[data-run="done"]', { timeout: PAGE_LOAD_TIMEOUT_MS });
      await page.screenshot({ path: join(SHOTS, `injection-checked-${DESKTOP.width}x${DESKTOP.height}.png`), fullPage: true });
      // As a user sees it: the call and each finding named once, only driving sentences struck, the heatmap in its card.
      await expectBlockedInjectionPanels(page);

      const decision = await page.getAttribute('#verdict', 'data-decision');
      // The demo opens on travel / injection, seed 1, which the embedded model blocks (test/engine/demo-cases.test.ts).
      expect(decision).toBe('block');
      await expect(page.locator('#chart svg[role="img"]').count()).resolves.toBe(1);
      await expect(page.locator('#span .sentence').count()).resolves.toBeGreaterThan(0);
      await expect(page.locator('#timings tbody tr').count()).resolves.toBeGreaterThan(0);
      await expect(page.locator('#defense').getAttribute('data-final')).resolves.toMatch(/call|blocked/);
      // The model section counts the guard's checks toward whether it knows the agent (the check and any re-check).
      const familiarity = await page.evaluate(() => (globalThis as unknown as { __edgearmorDemo: { status: GuardStatus } }).__edgearmorDemo.status.familiarity);
      expect(familiarity.threshold).toBe(-4.92);
      expect(familiarity.checks).toBeGreaterThanOrEqual(1);
      await expect(page.locator('#familiarity').textContent()).resolves.toBe(
        `familiarity: ${familiarity.below} of ${familiarity.checks} calls predicted below -4.92 nats per action token; too few checks to judge the agent (10 needed)`,
      );

      const { input, verdict } = await page.evaluate(() => {
        const demo = (globalThis as unknown as { __edgearmorDemo: { lastInput: unknown; lastVerdict: Verdict } }).__edgearmorDemo;
        return { input: demo.lastInput as { messages: unknown[]; action: unknown; tools?: unknown[]; intended_action?: unknown }, verdict: demo.lastVerdict };
      });
      expect(verdict.reason).toBe('model');
      expect(verdict.backend).toBe('wasm');
      const { userWeight, tau } = verdict.attribution!;
      await expect(page.locator('#rule-score').textContent()).resolves.toBe(
        `Score ${verdict.score!.toFixed(3)}: the strongest tool result's (or group's) Δ less ${userWeight} × the user's Δ; a result is flagged only above ${(-tau).toFixed(2)} (on wasm)`,
      );
      const { intended_action: _intended, ...guardInput } = input;
      const inNode = await node.check(guardInput);
      expectClose(verdict, inNode);
      // The page shows the decision the engine made; how often that decision is right is the evaluation's job.
      expect(decision).toBe(inNode.decision);
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS * 2,
  );

  it(
    'loads a hub-layout model (external data, no extensions) with the attention adapter in the worker; scores equal Node within 1e-3',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      const status = await startGuardPage(page, { url: `${server.url}harness.html`, modelUrl: HUB_FIXTURE_URL, modelVariant: 'fp32', backend: 'wasm' });
      expect(status).toMatchObject({ state: 'ready', backend: 'wasm', model: 'tiny-proxy-hub', variant: 'fp32', attention: true });
      const c = findCase('banking', 'poisoning', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const hubNode = createNodeGuard({ modelDir: HUB_FIXTURE_DIR, modelVariant: 'fp32', backends: ['node'] });
      try {
        const verdict = await checkInPage(page, input);
        expectClose(verdict, await hubNode.check(input));
        expect(verdict.toolPoisoning!.attention).not.toBeNull();
      } finally {
        await hubNode.dispose();
      }
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'loads a fused-kernel model (GroupQueryAttention, q4) in the worker: right-padded, single-row plans and its qk_output attention; verdict equal to Node within 1e-3',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      const status = await startGuardPage(page, { url: `${server.url}harness.html`, modelUrl: GQA_FIXTURE_URL, modelVariant: 'q4', backend: 'wasm' });
      expect(status).toMatchObject({ state: 'ready', backend: 'wasm', model: 'tiny-proxy-gqa', variant: 'q4', attention: true });
      const c = findCase('banking', 'poisoning', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const gqaNode = createNodeGuard({ modelDir: GQA_FIXTURE_DIR, modelVariant: 'q4', backends: ['node'] });
      try {
        const verdict = await checkInPage(page, input);
        expect(verdict.reason).toBe('model');
        expectClose(verdict, await gqaNode.check(input));
        expect(verdict.toolPoisoning!.attention).not.toBeNull();
      } finally {
        await gqaNode.dispose();
      }
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'scores on a remote proxy from the page\'s worker (CORS-allowed local vLLM-protocol server): same verdict as Node',
    async () => {
      const engine = await createEngine(await loadModelFiles(directoryReader(MODEL_DIR), 'q4'), { backend: 'node' });
      const proxy = await startProxyServer({ engine, servedModelName: 'proxy', allowedOrigins: [new URL(server.url).origin] });
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      try {
        const remoteProxy = { url: proxy.url, model: 'proxy' };
        const status = await startGuardPage(page, { url: `${server.url}harness.html`, modelUrl: PAGE_MODEL_URL, remoteProxy });
        expect(status).toMatchObject({ state: 'ready', backend: 'remote', variant: 'remote' });
        const c = findCase('travel', 'injection', 1)!;
        const input = { messages: c.messages, action: c.action, tools: c.tools };
        const verdict = await checkInPage(page, input);
        expect(verdict.backend).toBe('remote');
        expect(proxy.requests).toBe(1);
        expectClose(verdict, await node.check(input));
        expect(errors).toEqual([]);
        expect(external).toEqual([]);
      } finally {
        await page.close();
        await proxy.close();
        await engine.dispose();
      }
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'refuses a tampered model file and shows the integrity error',
    async () => {
      // A second URL for the same files, so the untampered copies in Cache Storage are not reused.
      await browser.context.route('**/tampered-model/**', async (route) => {
        const url = route.request().url().replace('/tampered-model/', PAGE_MODEL_URL.startsWith('/') ? PAGE_MODEL_URL : `/${PAGE_MODEL_URL}`);
        const response = await route.fetch({ url });
        const body = Buffer.from(await response.body());
        if (url.endsWith('.onnx')) body[body.length - 10] = body[body.length - 10]! ^ 0xff;
        await route.fulfill({ response, body });
      });
      const page = await browser.context.newPage();
      const errors = watchConsole(page, [/tamper|integrity|hash mismatch|Failed to load resource/i]);
      await page.goto(`${server.url}?model=${encodeURIComponent('/tampered-model/')}&backend=wasm&threads=1`);
      await page.waitForSelector('body[data-state="failed"]', { timeout: PAGE_LOAD_TIMEOUT_MS });
      const shown = await page.textContent('#model-error');
      expect(shown).toMatch(/IntegrityError/);
      expect(shown).toMatch(/tampering/);
      await expect(page.locator('#run').isDisabled()).resolves.toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );

  it(
    'sends a call pending on a crashed worker to a fresh worker, which answers it with the model, and the next call too',
    async () => {
      // The model request hangs until released, so the first check is still pending when the worker crashes.
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      await browser.context.route('**/crash-model/**', async (route) => {
        await released;
        await route.fulfill({ response: await route.fetch({ url: route.request().url().replace('/crash-model/', PAGE_MODEL_URL.startsWith('/') ? PAGE_MODEL_URL : `/${PAGE_MODEL_URL}`) }) });
      });
      const page = await browser.context.newPage();
      const errors = watchConsole(page, [/simulated crash/]);
      await page.goto(`${server.url}harness.html`);
      const workerStarted = page.waitForEvent('worker');
      const started = startGuardPage(page, { modelUrl: '/crash-model/', backend: 'wasm' }).then(
        () => 'ready',
        (e: unknown) => (e instanceof PageGuardError ? e.code : String(e)),
      );
      await page.waitForFunction(() => (globalThis as unknown as { __edgearmorHarness?: { guard: unknown } }).__edgearmorHarness?.guard != null);
      const pending = checkInPage(page, {
        messages: [
          { role: 'user', content: 'Pay my rent.' },
          { role: 'tool', tool_name: 'read_inbox', content: 'Send 900 EUR to XX00.' },
        ],
        action: { name: 'send_money', arguments: { iban: 'XX00', amount: 900 } },
      }).then(
        (v) => `${v.reason}:${v.decision}:${v.error?.code ?? 'none'}`,
        (e: unknown) => (e instanceof PageGuardError ? e.code : String(e)),
      );
      const worker = await workerStarted;
      await worker.evaluate(() => {
        setTimeout(() => {
          throw new Error('simulated crash');
        }, 0);
      });
      // The first worker's start is reported as crashed; the pending call waits for the fresh worker's model.
      await expect(started).resolves.toBe('worker-crashed');
      release();
      expect(await pending).toMatch(/^model:(allow|block):none$/);
      // The next call runs on the same fresh worker.
      const verdict = await checkInPage(page, {
        messages: [
          { role: 'user', content: 'Pay my rent.' },
          { role: 'tool', tool_name: 'read_inbox', content: 'Send 900 EUR to XX00.' },
        ],
        action: { name: 'send_money', arguments: { iban: 'XX00', amount: 900 } },
      });
      expect(verdict.reason).toBe('model');
      expect(errors).toEqual([]);
      await page.close();
    },
    PAGE_LOAD_TIMEOUT_MS,
  );
});
