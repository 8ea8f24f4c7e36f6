/**
 * The MV3 example extension (examples/extension) loaded unpacked in Chromium: its content script
 * reads a local page, the service worker relays it to the guard in the offscreen document, and the
 * verdict comes back. The extension's verdict must equal the Node engine's on the same conversation
 * (the page's visible text as the read_page tool result); how often the model catches injections is
 * measured by the evaluation, not asserted here.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page, Worker } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GuardInput } from '../../src/core/index.js';
import type { Verdict } from '../../src/core/verdict.js';
import { EXTENSION_PAGES, EXTENSION_REQUEST, extensionInput } from '../../src/eval/acceptance.js';
import { createNodeGuard } from '../../src/node.js';
import { buildExtension, CAN_RUN, HAS_REAL_MODEL, keepOffline, launchChromium, watchConsole, type BrowserHandle } from './browser-helpers.js';

const SETUP_TIMEOUT_MS = 180_000;
const CHECK_TIMEOUT_MS = 120_000;
// The pages are the product's acceptance cases (src/eval/acceptance.ts), which score their rendered text.
const PAGES: Record<string, string> = Object.fromEntries(Object.entries(EXTENSION_PAGES).map(([path, page]) => [path, page.html]));
const INJECTED = EXTENSION_PAGES['/injected.html'];
const CLEAN = EXTENSION_PAGES['/clean.html'];

describe.skipIf(!CAN_RUN)('the MV3 example extension in Chromium', () => {
  let server: Server;
  let origin: string;
  let browser: BrowserHandle;
  let external: string[];
  let sw: Worker;

  beforeAll(async () => {
    const dir = await buildExtension();
    server = createServer((req, res) => {
      const body = PAGES[req.url ?? ''];
      res.writeHead(body ? 200 : 404, { 'content-type': 'text/html' }).end(body ?? 'not found');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium({ webgpu: false, extraArgs: [`--disable-extensions-except=${dir}`, `--load-extension=${dir}`] });
    external = await keepOffline(browser.context);
    sw = browser.context.serviceWorkers()[0] ?? (await browser.context.waitForEvent('serviceworker'));
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => server?.close(done));
  });

  /**
   * The same conversation scored in Node, from the page's rendered text (what the content script reads),
   * which is also the text the acceptance cases score.
   */
  async function nodeVerdict(page: Page, expected: { text: string; action: GuardInput['action'] }): Promise<Verdict> {
    const text = await page.evaluate(() => document.body.innerText);
    expect(text).toBe(expected.text);
    const guard = createNodeGuard({ backends: ['wasm'] });
    try {
      return await guard.check(extensionInput(text, expected.action, page.url()));
    } finally {
      await guard.dispose();
    }
  }

  function expectSameVerdict(browserVerdict: Verdict, node: Verdict): void {
    expect(browserVerdict.decision).toBe(node.decision);
    expect(browserVerdict.flagged).toEqual(node.flagged);
    expect(Math.abs(browserVerdict.attribution!.user.normalizedDelta - node.attribution!.user.normalizedDelta)).toBeLessThan(1e-3);
    browserVerdict.attribution!.spans.forEach((s, i) => expect(Math.abs(s.normalizedDelta - node.attribution!.spans[i]!.normalizedDelta)).toBeLessThan(1e-3));
  }

  async function checkPage(path: string, action: unknown): Promise<{ verdict: Verdict; page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    const errors = watchConsole(page);
    await page.goto(`${origin}${path}`);
    const verdict = await sw.evaluate(
      async ({ url, userRequest, action }) => {
        const g = globalThis as unknown as { chrome: { tabs: { query(q: object): Promise<Array<{ id: number }>> } }; edgearmor: { checkTab(id: number, o: object): Promise<Verdict> } };
        const [tab] = await g.chrome.tabs.query({ url });
        return g.edgearmor.checkTab(tab!.id, { userRequest, action });
      },
      { url: `${origin}${path}`, userRequest: EXTENSION_REQUEST, action },
    );
    return { verdict, page, errors };
  }

  it(
    'blocks the call proposed after reading a page with a planted injection, the page text being the tool result',
    async () => {
      const { verdict, page, errors } = await checkPage('/injected.html', INJECTED.action);
      expect(verdict.reason).toBe('model');
      expect(verdict.backend).toBe('wasm');
      expect(verdict.attribution?.spans.map((s) => [s.messageIndex, s.toolName])).toEqual([[2, 'read_page']]);
      if (HAS_REAL_MODEL) {
        expect(verdict.decision).toBe('block');
        expect(verdict.flagged.map((f) => f.messageIndex)).toEqual([2]);
        expectSameVerdict(verdict, await nodeVerdict(page, INJECTED));
      }
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    CHECK_TIMEOUT_MS,
  );

  it(
    'allows the call proposed after reading a clean page',
    async () => {
      const { verdict, page } = await checkPage('/clean.html', CLEAN.action);
      expect(verdict.reason).toBe('model');
      if (HAS_REAL_MODEL) {
        expect(verdict.decision).toBe('allow');
        expectSameVerdict(verdict, await nodeVerdict(page, CLEAN));
      }
      expect(external).toEqual([]);
      await page.close();
    },
    CHECK_TIMEOUT_MS,
  );

  it(
    'shows the checks in the popup (decision, why, which span) and passes the options page settings to the guard',
    async () => {
      type Check = { tabId: number; action: string; decision: string; headline: string; spans: string[] };
      const extensionId = new URL(sw.url()).host;
      const checks = await sw.evaluate(async () => ((await (globalThis as unknown as { chrome: { storage: { session: { get(k: string): Promise<{ checks: unknown }> } } } }).chrome.storage.session.get('checks')).checks) as Check[]);
      expect(checks.map((c) => c.action)).toEqual(['book_flight', 'send_money']);
      const injected = checks[1]!;

      const popup = await browser.context.newPage();
      const errors = watchConsole(popup);
      // The popup opened as a page, for the injected page's tab (a real popup reads the active tab).
      await popup.goto(`chrome-extension://${extensionId}/popup.html?tab=${injected.tabId}`);
      await popup.waitForSelector('body[data-ready="true"]');
      await expect(popup.locator('#checks > li').count()).resolves.toBe(2);
      const current = (await popup.locator('#current').textContent()) ?? '';
      expect(current).toContain(injected.decision === 'block' ? 'Blocked' : 'Allowed');
      expect(current).toContain(`Why: ${injected.headline}`);
      if (HAS_REAL_MODEL) expect(current).toContain('Span: read_page result, messages[2]');
      // Whether the proxy knows the agent: the guard's count over both checks, as the service worker stored it.
      const familiarity = await sw.evaluate(async () => (await (globalThis as unknown as { chrome: { storage: { session: { get(k: string): Promise<{ familiarity: unknown }> } } } }).chrome.storage.session.get('familiarity')).familiarity);
      expect(familiarity).toMatch(HAS_REAL_MODEL ? /^familiarity: [0-2] of 2 calls predicted below -4\.92 nats per action token; too few checks to judge the agent/ : /^familiarity: /);
      await expect(popup.locator('#familiarity').textContent()).resolves.toBe(familiarity);

      const options = await browser.context.newPage();
      await options.goto(`chrome-extension://${extensionId}/options.html`);
      await options.waitForSelector('body[data-ready="true"]');
      await options.fill('#privileged', 'send_money, send_email');
      await options.selectOption('#on-error', 'allow');
      await options.click('button[type="submit"]');
      await options.waitForSelector('#saved:not(:empty)');
      const stored = await sw.evaluate(async () => (await (globalThis as unknown as { chrome: { storage: { local: { get(k: string): Promise<{ options: unknown }> } } } }).chrome.storage.local.get('options')).options);
      expect(stored).toEqual({ privilegedTools: ['send_money', 'send_email'], onError: 'allow' });
      // book_flight is no longer a privileged tool: the guard lets it through unchecked, and says so.
      const { verdict, page } = await checkPage('/clean.html', CLEAN.action);
      expect(verdict).toMatchObject({ decision: 'allow', reason: 'not-privileged' });
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await Promise.all([popup.close(), options.close(), page.close()]);
    },
    CHECK_TIMEOUT_MS,
  );
});
