/**
 * The demo's pictures, as plain DOM/SVG: each has a text alternative (a title/desc and a table or
 * list with the same numbers), and colour is never the only cue (flagged bars carry a label).
 * Palette: Okabe-Ito (colour-blind safe).
 */
import type { Verdict } from '../core/verdict.js';
import type { MindGuardVerdict } from '../core/mindguard/types.js';
import type { SentenceRange } from '../core/defense.js';
import { messageRef } from '../core/message-ref.js';
import { DEFAULT_GUARD_OPTIONS } from '../core/options.js';

/** Okabe-Ito colours. */
export const PALETTE = {
  blue: '#0072B2',
  sky: '#56B4E9',
  vermillion: '#D55E00',
  orange: '#E69F00',
  green: '#009E73',
  purple: '#CC79A7',
  yellow: '#F0E442',
  black: '#000000',
} as const;

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

function s(tag: string, attrs: Record<string, string | number> = {}, ...children: Array<Node | string>): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

const fmt = (x: number): string => (Number.isFinite(x) ? x.toFixed(3) : String(x));

/** One bar of the attribution chart. */
interface Bar {
  label: string;
  value: number;
  kind: 'user' | 'span' | 'tool';
  flagged: boolean;
  /** The value past which the guard flags this bar's part (its group's dashed line), when the rule has one. */
  threshold: number | null;
}

/**
 * The description threshold: the guard judges descriptions with the seeds' weighting of dU (1) and tau
 * shifted by toolPoisoning's leave-one-out margin, so they have their own line. The demo's guard runs
 * with the default options, whose margins these are.
 */
export function descriptionThreshold(userDelta: number, tau: number, beforeToolResults: boolean): number {
  const tp = DEFAULT_GUARD_OPTIONS.toolPoisoning;
  const margin = beforeToolResults ? tp.beforeToolResults.leaveOneOutMargin : tp.leaveOneOutMargin;
  return userDelta - (tau - margin);
}

function bars(verdict: Verdict, beforeToolResults: boolean): Bar[] {
  const a = verdict.attribution;
  if (!a) return [];
  // The 'causalarmor' rule's line for tool results; other rules weigh parts of the call and draw no line.
  const spanLine = a.rule === 'causalarmor' ? (a.userWeight ?? 1) * a.user.normalizedDelta - a.tau : null;
  const toolLine = a.rule === 'causalarmor' ? descriptionThreshold(a.user.normalizedDelta, a.tau, beforeToolResults) : null;
  const out: Bar[] = [{ label: 'user request', value: a.user.normalizedDelta, kind: 'user', flagged: false, threshold: null }];
  for (const span of a.spans) out.push({ label: `${span.toolName ?? 'tool'} result, ${messageRef(span.messageIndex)}`, value: span.normalizedDelta, kind: 'span', flagged: span.flagged, threshold: spanLine });
  for (const t of verdict.toolPoisoning?.leaveOneOut?.tools ?? []) out.push({ label: `${t.tool} description`, value: t.normalizedDelta, kind: 'tool', flagged: t.flagged, threshold: toolLine });
  return out;
}

/** The bar chart of normalised deltas, each group (tool results, tool descriptions) with its own dashed flag line, plus a data table. */
export function attributionChart(verdict: Verdict, options: { beforeToolResults?: boolean } = {}): HTMLElement {
  const a = verdict.attribution;
  if (!a) return h('p', { class: 'muted' }, verdict.message ?? 'No attribution ran for this call.');
  const data = bars(verdict, options.beforeToolResults ?? false);
  const weight = a.userWeight ?? 1;
  const groups = [
    { kind: 'span' as const, name: weight === 1 ? 'results: user Δ − τ' : `results: ${weight} × user Δ − τ` },
    { kind: 'tool' as const, name: 'descriptions: user Δ − τ + margin' },
  ]
    .map((g) => ({ ...g, rows: data.map((d, i) => ({ d, i })).filter(({ d }) => d.kind === g.kind) }))
    .filter((g) => g.rows.length > 0 && g.rows[0]!.d.threshold !== null)
    .map((g) => ({ ...g, threshold: g.rows[0]!.d.threshold! }));
  const values = [0, ...groups.map((g) => g.threshold), ...data.map((d) => d.value)];
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const span = hi - lo || 1;
  // Room for "get_hotel_reviews result, messages[12]" at 11 px.
  const labelW = 230;
  const plotW = 260;
  const rowH = 26;
  const top = 22;
  const width = labelW + plotW + 90;
  const height = top + data.length * rowH + 24;
  const x = (v: number) => labelW + ((v - lo) / span) * plotW;
  const titleId = `chart-title-${Math.random().toString(36).slice(2)}`;
  const descId = `${titleId}-desc`;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': `${titleId} ${descId}`, class: 'chart' });
  svg.append(
    s('title', { id: titleId }, 'Normalised change in the action log-probability when each part is removed'),
    s(
      'desc',
      { id: descId },
      `${groups.map((g) => `Flag line for ${g.name.replace(':', '')}: ${fmt(g.threshold)}`).join('. ')}${groups.length ? '. ' : ''}` +
        `User delta ${fmt(a.user.normalizedDelta)}, tau ${fmt(a.tau)}. ` +
        data.map((d) => `${d.label}: ${fmt(d.value)}${d.flagged ? ', flagged' : ''}`).join('; '),
    ),
  );
  svg.append(s('line', { x1: x(0), x2: x(0), y1: top - 6, y2: height - 18, stroke: '#666', 'stroke-width': 1 }));
  data.forEach((d, i) => {
    const y = top + i * rowH;
    const color = d.kind === 'user' ? PALETTE.blue : d.flagged ? PALETTE.vermillion : d.kind === 'tool' ? PALETTE.purple : PALETTE.sky;
    const x0 = Math.min(x(0), x(d.value));
    const w = Math.max(1, Math.abs(x(d.value) - x(0)));
    svg.append(s('text', { x: labelW - 6, y: y + 16, 'text-anchor': 'end', class: 'bar-label' }, d.label));
    const rect = s('rect', { x: x0, y: y + 4, width: w, height: rowH - 8, fill: color, class: `bar${d.flagged ? ' flagged' : ''}`, 'data-flagged': String(d.flagged), ...(d.flagged ? { stroke: PALETTE.black, 'stroke-width': 2 } : {}) });
    rect.append(s('title', {}, `${d.label}: ${fmt(d.value)}${d.flagged ? ' (flagged)' : ''}`));
    svg.append(rect);
    svg.append(s('text', { x: Math.max(x(d.value), x(0)) + 4, y: y + 16, class: 'bar-value' }, `${fmt(d.value)}${d.flagged ? ' flagged' : ''}`));
  });
  // Each group's line spans only its own rows: results and descriptions are judged against different lines.
  for (const g of groups) {
    const tx = x(g.threshold);
    const first = top + g.rows[0]!.i * rowH;
    const last = top + (g.rows[g.rows.length - 1]!.i + 1) * rowH;
    const line = s('line', { x1: tx, x2: tx, y1: first, y2: last, stroke: PALETTE.black, 'stroke-width': 2, 'stroke-dasharray': '5 3', class: 'flag-line' });
    line.append(s('title', {}, `flag line, ${g.name}: ${fmt(g.threshold)}`));
    svg.append(line);
  }
  svg.append(s('text', { x: labelW, y: height - 4, class: 'axis-label' }, `${fmt(lo)}`), s('text', { x: labelW + plotW, y: height - 4, 'text-anchor': 'end', class: 'axis-label' }, `${fmt(hi)}`));
  const key = h(
    'p',
    { class: 'legend' },
    `Dashed lines: a bar past its group's line is flagged. ${groups.map((g) => `${g.name} = ${fmt(g.threshold)}`).join('; ')} (τ = ${fmt(a.tau)}).`,
  );

  const table = h(
    'table',
    { class: 'data-table' },
    h('caption', {}, 'The same numbers as a table'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Part'), h('th', { scope: 'col' }, 'Normalised Δ'), h('th', { scope: 'col' }, 'Flag line'), h('th', { scope: 'col' }, 'Flagged'))),
    h('tbody', {}, ...data.map((d) => h('tr', {}, h('th', { scope: 'row' }, d.label), h('td', {}, fmt(d.value)), h('td', {}, d.threshold === null ? '—' : fmt(d.threshold)), h('td', {}, d.kind === 'user' ? '—' : d.flagged ? 'yes' : 'no')))),
  );
  return h('figure', {}, svg as unknown as Node, key, h('details', {}, h('summary', {}, 'Show as a table'), table));
}

/** The span's text with each sentence shaded by its leave-one-out delta; redacted sentences struck through; `redactAbove` is the defense's bar, for the legend. */
export function sentenceShading(text: string, ranges: readonly SentenceRange[], deltas: readonly number[], redacted: ReadonlySet<number>, caption: string, redactAbove: number): HTMLElement {
  const max = Math.max(1e-9, ...deltas.filter(Number.isFinite).map(Math.abs));
  const p = h('p', { class: 'span-text' });
  let cursor = 0;
  ranges.forEach((r, i) => {
    if (r.start > cursor) p.append(text.slice(cursor, r.start));
    const d = deltas[i] ?? 0;
    const alpha = Math.max(0, d) / max;
    const el = h(
      'span',
      {
        class: `sentence${redacted.has(i) ? ' redacted' : ''}`,
        tabindex: '0',
        'data-delta': String(d),
        style: `background-color: rgba(230, 159, 0, ${(0.08 + 0.82 * alpha).toFixed(2)})`,
        'aria-label': `Sentence ${i + 1}, delta ${fmt(d)}${redacted.has(i) ? ', redacted by the defense' : ''}: ${text.slice(r.start, r.end)}`,
        title: `Δ ${fmt(d)}${redacted.has(i) ? ' (redacted)' : ''}`,
      },
      text.slice(r.start, r.end),
      h('sup', { 'aria-hidden': 'true' }, fmt(d)),
    );
    p.append(el);
    cursor = r.end;
  });
  if (cursor < text.length) p.append(text.slice(cursor));
  const legend = h(
    'p',
    { class: 'legend' },
    'Darker orange = removing the sentence lowers the call’s log-probability more (number after each sentence); ',
    h('span', { class: 'redacted' }, 'struck through'),
    ` = redacted by the defense: removing it alone lowers the call’s log-probability by more than ${fmt(redactAbove)} a token.`,
  );
  return h('figure', { 'data-redact-above': String(redactAbove) }, h('figcaption', {}, caption), p, legend);
}

const KIND_COLOR: Record<string, string> = {
  user: PALETTE.blue,
  tool: PALETTE.purple,
  'invoked-tool': PALETTE.green,
  'tool-result': PALETTE.sky,
  'target-control': PALETTE.orange,
  'target-data': PALETTE.vermillion,
};

/** The decision-dependence graph (sources left, targets right; edge width = attention energy) and the attention heatmap. */
export function mindGuardView(mg: MindGuardVerdict, descriptionFlags: readonly string[] = []): HTMLElement {
  const sources = mg.nodes.filter((n) => !n.kind.startsWith('target'));
  const targets = mg.nodes.filter((n) => n.kind.startsWith('target'));
  const rowH = 28;
  const height = Math.max(sources.length, targets.length) * rowH + 20;
  // Room right of the targets for labels such as "search_hotels arguments".
  const width = 580;
  const pos = new Map<string, { x: number; y: number }>();
  sources.forEach((n, i) => pos.set(n.id, { x: 150, y: 20 + i * rowH }));
  targets.forEach((n, i) => pos.set(n.id, { x: 340, y: 20 + (i + 0.5) * (height / Math.max(1, targets.length)) - rowH / 2 }));
  const maxW = Math.max(1e-12, ...mg.edges.map((e) => e.weight));
  const flaggedTools = new Set(mg.air.filter((a) => a.air > mg.threshold).map((a) => a.tool));
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Decision-dependence graph: ${mg.edges.length} edges from ${sources.length} sources to ${targets.length} targets. ${mg.detected ? `Poisoned tool: ${mg.poisonedTool} (${mg.flow} flow).` : 'Nothing flagged.'}`, class: 'graph' });
  for (const e of mg.edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const line = s('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: '#555', 'stroke-opacity': (0.25 + 0.75 * (e.weight / maxW)).toFixed(2), 'stroke-width': (1 + 7 * (e.weight / maxW)).toFixed(2) });
    line.append(s('title', {}, `${e.source} → ${e.target}: ${e.weight.toPrecision(3)}`));
    svg.append(line);
  }
  for (const n of [...sources, ...targets]) {
    const p = pos.get(n.id)!;
    const isSource = !n.kind.startsWith('target');
    const poisoned = n.kind === 'tool' && flaggedTools.has(n.label);
    const circle = s('circle', { cx: p.x, cy: p.y, r: 7, fill: KIND_COLOR[n.kind] ?? '#999', ...(poisoned ? { stroke: PALETTE.black, 'stroke-width': 3 } : {}) });
    circle.append(s('title', {}, `${n.label} (${n.kind}, ${n.tokenCount} tokens)`));
    svg.append(circle, s('text', { x: isSource ? p.x - 12 : p.x + 12, y: p.y + 4, 'text-anchor': isSource ? 'end' : 'start', class: 'node-label' }, `${n.label}${poisoned ? ' (above threshold)' : ''}`));
  }
  const legend = h('ul', { class: 'legend kinds' }, ...Object.entries(KIND_COLOR).map(([k, c]) => h('li', {}, h('span', { class: 'swatch', style: `background:${c}`, 'aria-hidden': 'true' }), k)));
  const airList = h('ul', {}, ...mg.air.map((a) => h('li', {}, `AIR ${a.tool} → ${a.flow}: ${Number.isFinite(a.air) ? a.air.toFixed(3) : 'infinite'}${a.air > mg.threshold ? ' (above threshold)' : ''}`)));
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'mg-summary' },
      mg.detected
        ? `MindGuard's attention flags ${mg.poisonedTool} (${mg.flow} flow): AIR ${mg.score.toFixed(2)}, above the threshold ${mg.threshold}. Attention covers the tool's description and its results alike.`
        : `MindGuard's attention: no tool above the AIR threshold ${mg.threshold} (largest ${mg.score.toFixed(2)}).`,
      // The verdict can name a description that leave-one-out flagged while attention flags none: say where that came from.
      ...(descriptionFlags.length && !(mg.detected && descriptionFlags.includes(mg.poisonedTool ?? ''))
        ? [` The flagged description${descriptionFlags.length > 1 ? 's' : ''} (${descriptionFlags.join(', ')}) came from leave-one-out, the chart above.`]
        : []),
    ),
    svg as unknown as Node,
    legend,
    h('details', {}, h('summary', {}, 'Attention influence ratios'), airList),
    heatmap(mg),
  );
}

function viridisish(t: number): string {
  // Cividis-like ramp (blue -> yellow), readable with colour-vision deficiencies.
  const stops = [
    [0, 32, 76],
    [87, 92, 109],
    [166, 157, 117],
    [253, 234, 69],
  ];
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const c = stops[i]!.map((v, k) => Math.round(v + (stops[i + 1]![k]! - v) * f));
  return `rgb(${c.join(',')})`;
}

/**
 * The attention heatmap as a table: rows = action tokens, columns = source vertices. Column names run vertically so a
 * dozen tools fit a card; more scroll inside the wrapper, a focusable region, with the caption outside it.
 */
export function heatmap(mg: MindGuardVerdict): HTMLElement {
  const { sources, rows } = mg.heatmap;
  const labels = new Map(mg.nodes.map((n) => [n.id, n.label]));
  const max = Math.max(1e-12, ...rows.flatMap((r) => r.bySource));
  const captionId = `heatmap-caption-${Math.random().toString(36).slice(2)}`;
  return h(
    'figure',
    { class: 'heatmap-figure' },
    h('figcaption', { id: captionId }, 'Attention of each action token to each source (darker blue = less, yellow = more)'),
    h(
      'div',
      { class: 'heatmap-wrap', role: 'region', tabindex: '0', 'aria-labelledby': captionId },
      h(
        'table',
        { class: 'heatmap', 'aria-labelledby': captionId },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'token (target)'), ...sources.map((id) => h('th', { scope: 'col', class: 'source' }, h('span', {}, labels.get(id) ?? id))))),
        h(
          'tbody',
          {},
          ...rows.map((r) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, `#${r.row} ${r.target ?? '—'}`),
              ...r.bySource.map((v) => h('td', { style: `background:${viridisish(v / max)};color:${v / max > 0.6 ? '#000' : '#fff'}`, title: v.toPrecision(3) }, v.toFixed(2))),
            ),
          ),
        ),
      ),
    ),
  );
}
