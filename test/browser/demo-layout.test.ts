/**
 * The demo as a user sees it, at a desktop (1280 px) and a phone-sized (420 px) viewport: screenshots of
 * the main states (model loaded; a checked travel call whose history holds a call with a line break in an
 * argument, and whose tools give a heatmap), no horizontal overflow, the heatmap and charts inside their cards, no emoji, bars marked
 * flagged exactly when the verdict flags their part, chat bubbles with real line breaks, and no console errors.
 * Then travel / injection at 1280 x 800: the Verdict panel names the checked call once and each finding once, the
 * sentence view strikes only the sentences the defense redacted for driving the call, the heatmap fits its card or
 * scrolls inside it, and every label sits on its control's row, just before it.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DefenseResult } from '../../src/core/defense.js';
import type { Verdict } from '../../src/core/verdict.js';
import { CAN_RUN, HAS_REAL_MODEL, keepOffline, launchChromium, PAGE_MODEL_URL, ROOT, startDevServer, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';

const SETUP_TIMEOUT_MS = 60_000;
// The first page load transforms the worker's dependencies on the dev server; a WASM check takes seconds.
const RUN_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 240_000;
const WIDTHS = [1280, 420] as const;
const VIEWPORT_HEIGHT = 900;
const DESKTOP = { width: 1280, height: 800 } as const;
/** How far a label may sit left of its control, in px (the gap of a .field). */
const LABEL_GAP_PX = 24;
/** Screenshots land here (git-ignored) for a person to look at. */
const SHOTS = join(ROOT, 'test-results', 'demo-layout');

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

/** What the Verdict, sentence and heatmap views show after a check, read from the page. */
interface Panels {
  verdictText: string;
  callShown: string;
  findings: string[];
  sentences: Array<{ delta: number; struck: boolean }>;
  redactAbove: number;
  heatmap: { scrollWidth: number; clientWidth: number; overflowX: string; insideCard: boolean } | null;
  /** Each label of a form control: whether it sits on its control's row, and how far left of it. */
  labels: Array<{ label: string; sameRow: boolean; gapPx: number }>;
}

function readPanels(page: Page): Promise<Panels> {
  return page.evaluate(() => {
    const heatmapWrap = document.querySelector<HTMLElement>('.heatmap-wrap');
    const figure = document.querySelector<HTMLElement>('#span figure');
    const labels = Array.from(document.querySelectorAll<HTMLLabelElement>('label[for]'))
      .map((label) => ({ label, control: document.getElementById(label.htmlFor) }))
      .filter(({ label, control }) => control !== null && !label.classList.contains('visually-hidden') && label.getBoundingClientRect().width > 0 && control.tagName !== 'PROGRESS')
      .map(({ label, control }) => {
        const l = label.getBoundingClientRect();
        const c = control!.getBoundingClientRect();
        const middle = (l.top + l.bottom) / 2;
        return { label: label.textContent ?? '', sameRow: middle >= c.top && middle <= c.bottom, gapPx: c.left - l.right };
      });
    let insideCard = false;
    if (heatmapWrap) {
      const w = heatmapWrap.getBoundingClientRect();
      const card = heatmapWrap.closest('section')!.getBoundingClientRect();
      insideCard = w.left >= card.left - 1 && w.right <= card.right + 1;
    }
    return {
      verdictText: document.getElementById('verdict')!.innerText,
      callShown: document.getElementById('verdict-call')?.textContent ?? '',
      findings: Array.from(document.querySelectorAll('#verdict .findings li')).map((li) => li.textContent ?? ''),
      sentences: Array.from(document.querySelectorAll<HTMLElement>('#span .sentence')).map((el) => ({ delta: Number(el.dataset['delta']), struck: el.classList.contains('redacted') })),
      redactAbove: Number(figure?.dataset['redactAbove']),
      heatmap: heatmapWrap && { scrollWidth: heatmapWrap.scrollWidth, clientWidth: heatmapWrap.clientWidth, overflowX: getComputedStyle(heatmapWrap).overflowX, insideCard },
      labels,
    };
  });
}

const occurrences = (text: string, part: string): number => text.split(part).length - 1;

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
  it(
    'travel / injection at 1280 x 800: the call and each finding named once, only driving sentences struck, the heatmap fits or scrolls, labels beside their controls',
    async () => {
      const page = await browser.context.newPage();
      const errors = watchConsole(page);
      await page.setViewportSize(DESKTOP);
      await page.goto(`${server.url}?model=${encodeURIComponent(PAGE_MODEL_URL)}&backend=wasm&domain=travel&variant=injection`);
      await page.waitForSelector('body[data-state="ready"]', { timeout: RUN_TIMEOUT_MS });
      await page.screenshot({ path: join(SHOTS, `injection-loaded-${DESKTOP.width}x${DESKTOP.height}.png`) });
      await page.click('#run');
      await page.waitForSelector('body[data-run="done"]', { timeout: RUN_TIMEOUT_MS });
      await page.screenshot({ path: join(SHOTS, `injection-checked-${DESKTOP.width}x${DESKTOP.height}.png`), fullPage: true });
      const { action, verdict, defense } = await page.evaluate(() => {
        const demo = (globalThis as unknown as { __edgearmorDemo: { lastInput: { action: { name: string; arguments: unknown } }; lastVerdict: Verdict; lastDefense: DefenseResult } }).__edgearmorDemo;
        return { action: demo.lastInput.action, verdict: demo.lastVerdict, defense: demo.lastDefense };
      });
      const p = await readPanels(page);
      // A guard that failed (a timeout on a loaded machine) shows no sentences or heatmap: say so first.
      expect(verdict.reason, `the guard failed: ${verdict.error?.message ?? ''}`).toBe('model');

      // The call checked, with its arguments, once in the panel.
      expect(p.callShown).toBe(`${action.name}(${JSON.stringify(action.arguments)})`);
      expect(occurrences(p.verdictText, `${action.name}(`)).toBe(1);
      // Each finding once: not in a headline above the list as well.
      expect(p.findings.length).toBe(new Set(p.findings).size);
      for (const f of p.findings) expect(occurrences(p.verdictText, f), f).toBe(1);

      // Struck exactly where the defense's bar is passed (or, when no sentence passes it, the strongest one alone).
      expect(p.sentences.length).toBeGreaterThan(0);
      const passing = p.sentences.filter((x) => x.delta > p.redactAbove);
      const strongest = Math.max(...p.sentences.map((x) => x.delta));
      const sanitized = defense.sanitizedSpans.some((x) => x.method === 'sanitizer');
      for (const x of p.sentences) {
        const driving = passing.length > 0 ? x.delta > p.redactAbove : x.delta === strongest && x.delta > 0;
        expect(x.struck, `sentence with delta ${x.delta} against the bar ${p.redactAbove}`).toBe(sanitized && driving);
      }
      if (HAS_REAL_MODEL) {
        // The embedded model blocks this case on the tool result and redacts its injected sentences, not the flight list beside them.
        expect(verdict.decision).toBe('block');
        expect(p.sentences.filter((x) => x.struck).length).toBeGreaterThan(0);
        expect(p.sentences.filter((x) => !x.struck && x.delta > 0).length).toBeGreaterThan(0);
      }

      // The heatmap fits its card, or scrolls inside it.
      expect(p.heatmap).not.toBeNull();
      expect(p.heatmap!.insideCard).toBe(true);
      expect(p.heatmap!.scrollWidth <= p.heatmap!.clientWidth + 1 || ['auto', 'scroll'].includes(p.heatmap!.overflowX)).toBe(true);

      expect(p.labels.length).toBeGreaterThan(0);
      for (const l of p.labels) {
        expect(l.sameRow, `label "${l.label}" on its control's row`).toBe(true);
        expect(l.gapPx, `label "${l.label}" just left of its control`).toBeGreaterThanOrEqual(0);
        expect(l.gapPx, `label "${l.label}" just left of its control`).toBeLessThanOrEqual(LABEL_GAP_PX);
      }
      expect(errors).toEqual([]);
      expect(external).toEqual([]);
      await page.close();
    },
    TEST_TIMEOUT_MS,
  );
});
