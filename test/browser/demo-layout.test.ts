/**
 * The demo as a user sees it, at a desktop (1280 px) and a phone-sized (420 px) viewport: screenshots of
 * the main states (model loaded; a checked travel call whose history holds a call with a line break in an
 * argument, and whose tools give a heatmap), no horizontal overflow, the heatmap and charts inside their cards, no emoji, bars marked
 * flagged exactly when the verdict flags their part, chat bubbles with real line breaks, and no console errors.
 * What the panels say after a blocked injection is read on demo-dev.test.ts's travel / injection check
 * (demo-panels.ts), the same page at 1280 x 800, rather than a third check of it on WASM here.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Verdict } from '../../src/core/verdict.js';
import { CAN_RUN, keepOffline, launchChromium, PAGE_MODEL_URL, startDevServer, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';
import { SHOTS } from './demo-panels.js';

const SETUP_TIMEOUT_MS = 60_000;
// The first page load transforms the worker's dependencies on the dev server; a WASM check takes seconds.
const RUN_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 240_000;
const WIDTHS = [1280, 420] as const;
const VIEWPORT_HEIGHT = 900;

interface Layout {
  pageWidth: number;
  viewportWidth: number;
  /** Elements that stick out of their card, by selector. */
  outside: string[];
  emoji: string[];
  flaggedBars: number;
  literalEscapes: number;
}

function measure(page: Page): Promise<Layout> {
  return page.evaluate(() => {
    const outside: string[] = [];
    for (const sel of ['.heatmap-wrap', 'svg.chart', 'svg.graph', '.chat', '#verdict', 'textarea']) {
      for (const el of Array.from(document.querySelectorAll(sel))) {
        const card = el.closest('section');
        if (!card) continue;
        const r = el.getBoundingClientRect();
        const c = card.getBoundingClientRect();
        if (r.width > 0 && (r.right > c.right + 1 || r.left < c.left - 1)) outside.push(`${sel}: ${Math.round(r.left)}-${Math.round(r.right)} in card ${Math.round(c.left)}-${Math.round(c.right)}`);
      }
    }
    const text = document.body.innerText;
    return {
      pageWidth: document.documentElement.scrollWidth,
      viewportWidth: document.documentElement.clientWidth,
      outside,
      emoji: text.match(/\p{Extended_Pictographic}/gu) ?? [],
      flaggedBars: document.querySelectorAll('#chart rect.bar.flagged').length,
      literalEscapes: Array.from(document.querySelectorAll('#chat .msg')).filter((m) => (m.textContent ?? '').includes('\\n')).length,
    };
  });
}

async function shootBoth(page: Page, state: string): Promise<Layout[]> {
  const out: Layout[] = [];
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: VIEWPORT_HEIGHT });
    await page.screenshot({ path: join(SHOTS, `${state}-${width}.png`), fullPage: true });
    out.push(await measure(page));
  }
  return out;
}

function expectFits(layouts: Layout[]): void {
  for (const l of layouts) {
    expect(l.pageWidth, `page ${l.pageWidth} px wide in a ${l.viewportWidth} px viewport`).toBeLessThanOrEqual(l.viewportWidth);
    expect(l.outside).toEqual([]);
    expect(l.emoji).toEqual([]);
  }
}

function flaggedParts(v: Verdict): number {
  return (v.attribution?.spans.filter((s) => s.flagged).length ?? 0) + (v.toolPoisoning?.leaveOneOut?.tools.filter((t) => t.flagged).length ?? 0);
}

describe.skipIf(!CAN_RUN)('the demo at 1280 and 420 px', () => {
  let server: DemoServer;
  let browser: BrowserHandle;
  let external: string[];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startDevServer();
    browser = await launchChromium();
    external = await keepOffline(browser.context);
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it(
    'fits both viewports in every main state, agrees with the verdict, and logs no console errors',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      await page.goto(`${server.url}?model=${encodeURIComponent(PAGE_MODEL_URL)}&backend=wasm&domain=travel&variant=benign`);
      await page.waitForSelector('body[data-state="ready"]', { timeout: RUN_TIMEOUT_MS });
      expectFits(await shootBoth(page, 'loaded'));

      // An earlier call whose argument holds a line break, as generated shopping cases have (the chat must show the break, not "\n").
      await page.evaluate(() => {
        const area = document.getElementById('conversation') as HTMLTextAreaElement;
        const c = JSON.parse(area.value) as { messages: Array<{ tool_calls?: Array<{ arguments: Record<string, unknown> }> }> };
        const call = c.messages.flatMap((m) => m.tool_calls ?? [])[0]!;
        call.arguments = { ...call.arguments, note: 'first line\nsecond line' };
        area.value = JSON.stringify(c);
      });
      await page.setViewportSize({ width: WIDTHS[0], height: VIEWPORT_HEIGHT });
      await page.click('#run');
      await page.waitForSelector('body[data-run="done"]', { timeout: RUN_TIMEOUT_MS });
      const layouts = await shootBoth(page, 'checked');
      expectFits(layouts);
      const verdict = await page.evaluate(() => (globalThis as unknown as { __edgearmorDemo: { lastVerdict: Verdict } }).__edgearmorDemo.lastVerdict);
      // A bar says "flagged" exactly when the verdict flags its part.
      for (const l of layouts) expect(l.flaggedBars).toBe(flaggedParts(verdict));
      for (const l of layouts) expect(l.literalEscapes).toBe(0);
      await expect(page.locator('#chat .call').allTextContents()).resolves.toContainEqual(expect.stringContaining('\n'));
      await expect(page.locator('#verdict .badge').textContent()).resolves.toBe(verdict.decision === 'block' ? 'Blocked' : 'Allowed');
      await expect(page.locator('.heatmap').count()).resolves.toBe(1);
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
