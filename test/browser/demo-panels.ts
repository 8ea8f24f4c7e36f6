/**
 * What the demo's Verdict, sentence and heatmap views show after a check, read from the page, and what they must
 * show after a blocked injection at a desktop viewport: the Verdict panel names the checked call once and each
 * finding once, the sentence view strikes only the sentences the defense redacted for driving the call, the
 * heatmap fits its card or scrolls inside it, and every label sits on its control's row, just before it.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { DefenseResult } from '../../src/core/defense.js';
import type { Verdict } from '../../src/core/verdict.js';
import { ROOT } from './browser-helpers.js';

/** Screenshots land here (git-ignored) for a person to look at. */
export const SHOTS = join(ROOT, 'test-results', 'demo-layout');
/** The desktop viewport the panels are read at. */
export const DESKTOP = { width: 1280, height: 800 } as const;
/** How far a label may sit left of its control, in px (the gap of a .field). */
const LABEL_GAP_PX = 24;

/** What the Verdict, sentence and heatmap views show after a check. */
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

/** The panels after a check the guard blocked on a tool result (the page at {@link DESKTOP}). */
export async function expectBlockedInjectionPanels(page: Page): Promise<void> {
  const { action, verdict, defense } = await page.evaluate(() => {
    const demo = (globalThis as unknown as { __edgearmorDemo: { lastInput: { action: { name: string; arguments: unknown } }; lastVerdict: Verdict; lastDefense: DefenseResult } }).__edgearmorDemo;
    return { action: demo.lastInput.action, verdict: demo.lastVerdict, defense: demo.lastDefense };
  });
  const p = await readPanels(page);
  // A guard that failed (a timeout on a loaded machine) shows no sentences or heatmap: say so first.
  expect(verdict.reason, `the guard failed: ${verdict.error?.message ?? ''}`).toBe('model');
  expect(verdict.decision).toBe('block');

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
  // Blocked on the tool result: its injected sentences are struck, not the flight list beside them.
  expect(p.sentences.filter((x) => x.struck).length).toBeGreaterThan(0);
  expect(p.sentences.filter((x) => !x.struck && x.delta > 0).length).toBeGreaterThan(0);

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
}
