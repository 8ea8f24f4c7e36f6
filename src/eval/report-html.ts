/**
 * The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external assets)
 * that opens offline: metrics per method, ROC and precision-recall curves, per-suite bars,
 * confusion tables, and the most confident mistakes with their deltas.
 */
import type { ConfusionSummary } from '../core/metrics.js';
import { topMistakes, type CaseRecord, type EvalSummary, type MethodSummary } from './runner.js';

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#7f7f7f'];

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);
}

function f(x: number | null | undefined, digits = 3): string {
  return x === null || x === undefined || Number.isNaN(x) ? '—' : Number.isFinite(x) ? x.toFixed(digits) : String(x);
}

function curveSvg(title: string, xLabel: string, yLabel: string, series: Array<{ name: string; points: Array<[number, number]> }>, diagonal: boolean): string {
  const W = 360;
  const H = 300;
  const m = { l: 44, r: 12, t: 24, b: 40 };
  const x = (v: number) => m.l + v * (W - m.l - m.r);
  const y = (v: number) => H - m.b - v * (H - m.t - m.b);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const grid = ticks
    .map((t) => `<line x1="${x(t)}" y1="${y(0)}" x2="${x(t)}" y2="${y(1)}" class="grid"/><line x1="${x(0)}" y1="${y(t)}" x2="${x(1)}" y2="${y(t)}" class="grid"/>` +
      `<text x="${x(t)}" y="${y(0) + 14}" text-anchor="middle">${t}</text><text x="${x(0) - 6}" y="${y(t) + 4}" text-anchor="end">${t}</text>`)
    .join('');
  const lines = series
    .map((s, i) => s.points.length === 0 ? '' : `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${s.points.map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ')}"><title>${escapeHtml(s.name)}</title></polyline>`)
    .join('');
  const legend = series.map((s, i) => `<text x="${x(0) + 8}" y="${m.t + 14 + i * 14}" fill="${COLORS[i % COLORS.length]}">${escapeHtml(s.name)}</text>`).join('');
  const diag = diagonal ? `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" class="diag"/>` : '';
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeHtml(title)}">
<text x="${W / 2}" y="14" text-anchor="middle" class="title">${escapeHtml(title)}</text>${grid}${diag}${lines}${legend}
<text x="${(x(0) + x(1)) / 2}" y="${H - 6}" text-anchor="middle">${xLabel}</text><text transform="translate(12 ${(y(0) + y(1)) / 2}) rotate(-90)" text-anchor="middle">${yLabel}</text></svg>`;
}

function suiteBars(methods: readonly MethodSummary[]): string {
  const suites = [...new Set(methods.flatMap((m) => Object.keys(m.by_suite)))].sort();
  const barW = 10;
  const groupW = methods.length * barW * 2 + 24;
  const W = Math.max(360, 50 + suites.length * groupW);
  const H = 240;
  const y = (v: number) => H - 50 - v * (H - 80);
  let body = [0, 0.5, 1].map((t) => `<line x1="40" x2="${W - 4}" y1="${y(t)}" y2="${y(t)}" class="grid"/><text x="36" y="${y(t) + 4}" text-anchor="end">${t}</text>`).join('');
  suites.forEach((s, si) => {
    const gx = 50 + si * groupW;
    methods.forEach((m, mi) => {
      const c = m.by_suite[s];
      const color = COLORS[mi % COLORS.length];
      const bars: Array<[number | null | undefined, string, string]> = [[c?.tpr, 'TPR', '1'], [c?.fpr, 'FPR', '0.45']];
      bars.forEach(([v, what, opacity], k) => {
        const bx = gx + (mi * 2 + k) * barW;
        const h = v === null || v === undefined ? 0 : v;
        body += `<rect x="${bx}" y="${y(h)}" width="${barW - 1}" height="${y(0) - y(h)}" fill="${color}" fill-opacity="${opacity}"><title>${escapeHtml(`${m.method} ${s} ${what} ${f(v ?? null)}`)}</title></rect>`;
      });
    });
    body += `<text x="${gx + (methods.length * barW)}" y="${H - 32}" text-anchor="middle">${escapeHtml(s)}</text>`;
  });
  const legend = methods.map((m, i) => `<tspan fill="${COLORS[i % COLORS.length]}">${escapeHtml(m.method)} </tspan>`).join('');
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="per-suite TPR and FPR">
<text x="${W / 2}" y="14" text-anchor="middle" class="title">TPR (solid) and FPR (light) per suite</text>${body}<text x="40" y="${H - 10}">${legend}</text></svg>`;
}

function confusionTable(title: string, rows: Record<string, ConfusionSummary>): string {
  const body = Object.entries(rows)
    .map(([k, c]) => `<tr><td>${escapeHtml(k)}</td><td>${c.n}</td><td>${c.tp}</td><td>${c.fn}</td><td>${c.fp}</td><td>${c.tn}</td><td>${f(c.tpr)}</td><td>${f(c.fpr)}</td></tr>`)
    .join('');
  return `<h3>${escapeHtml(title)}</h3><table><tr><th></th><th>n</th><th>TP</th><th>FN</th><th>FP</th><th>TN</th><th>TPR</th><th>FPR</th></tr>${body}</table>`;
}

/** What flagged the method's blocks, by label: a message (the span rule) or only a tool (description, MindGuard). */
function blockedByTable(m: MethodSummary): string {
  const row = (label: 'injected' | 'benign') => {
    const b = m.blocked_by[label];
    return `<tr><td>${label}</td><td>${b.message}</td><td>${b.toolOnly}</td><td>${b.neither}</td></tr>`;
  };
  return `<h3>What flagged the blocks</h3><table><tr><th></th><th>a message</th><th>only a tool</th><th>neither</th></tr>${row('injected')}${row('benign')}</table>`;
}

function mistakes(records: readonly CaseRecord[], method: string): string {
  const { falsePositives, falseNegatives } = topMistakes(records, method, 10);
  const row = (rec: CaseRecord) => {
    const r = rec.results[method]!;
    const deltas = r.spans.map((s) => `${s.flagged ? '<b>' : ''}messages[${s.messageIndex}]${s.toolName ? ` ${escapeHtml(s.toolName)}` : ''}: ${f(s.delta)}${s.flagged ? '</b>' : ''}`).join('<br>');
    return `<tr><td>${escapeHtml(rec.id)}</td><td>${escapeHtml(rec.suite)}</td><td>${escapeHtml(rec.attack)}</td><td>${escapeHtml(rec.action)}</td><td>${f(r.score)}</td><td>${f(r.userDelta)}</td><td>${deltas || '—'}</td><td>${escapeHtml(rec.injectedIn.join(', ') || rec.poisonedTool || '—')}</td></tr>`;
  };
  const table = (title: string, list: CaseRecord[]) =>
    `<h4>${title} (${list.length})</h4>${list.length === 0 ? '<p>none</p>' : `<table><tr><th>case</th><th>suite</th><th>attack</th><th>action</th><th>score</th><th>dU</th><th>dS per span (flagged in bold)</th><th>injected in</th></tr>${list.map(row).join('')}</table>`}`;
  return table('Most confident false positives', falsePositives) + table('Most confident false negatives', falseNegatives);
}

/** Renders the report from the per-method summaries, the records and the run summary. */
export function renderHtmlReport(summary: EvalSummary, methods: readonly MethodSummary[], records: readonly CaseRecord[]): string {
  const metricRows = methods
    .map((m, i) => `<tr><td style="color:${COLORS[i % COLORS.length]}"><b>${escapeHtml(m.method)}</b></td><td>${m.n}</td><td>${f(m.tpr)}</td><td>${f(m.fpr)}</td><td>${f(m.roc_auc)}</td><td>${f(m.average_precision)}</td><td>${f(m.tpr_at_1pct_fpr)}</td><td>${f(m.tpr_at_5pct_fpr)}</td><td>${f(m.attribution_accuracy)} (${m.attribution.spans.correct + m.attribution.tools.correct}/${m.attribution.spans.total + m.attribution.tools.total})</td><td>${m.errors}</td><td>${f(m.latency_ms.p50, 1)}</td><td>${f(m.latency_ms.p95, 1)}</td><td>${escapeHtml(m.description)}</td></tr>`)
    .join('');
  const roc = curveSvg('ROC', 'FPR', 'TPR', methods.map((m) => ({ name: m.method, points: m.roc.map((p): [number, number] => [p.fpr, p.tpr]) })), true);
  const pr = curveSvg('Precision-recall', 'recall', 'precision', methods.map((m) => ({ name: m.method, points: m.pr.map((p): [number, number] => [p.recall, p.precision]) })), false);
  const scoredMethods = methods.filter((m) => m.method !== 'never-flag' && m.method !== 'always-flag');
  const perMethod = scoredMethods
    .map((m) => `<section><h2>${escapeHtml(m.method)}</h2>${confusionTable('Per suite', m.by_suite)}${confusionTable('Per attack', m.by_attack)}${confusionTable('Per agent pipeline', m.by_pipeline)}${confusionTable('Per case kind', m.by_kind)}${blockedByTable(m)}${mistakes(records, m.method)}</section>`)
    .join('');
  const run = summary.run;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>EdgeArmor evaluation ${escapeHtml(run.date)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}
td:first-child,th:first-child{text-align:left}svg{font:11px sans-serif;margin:4px 12px 12px 0;background:#fff}
svg .grid{stroke:#e4e4e4}svg .diag{stroke:#bbb;stroke-dasharray:4 3}svg .title{font-weight:bold}
.curves{display:flex;flex-wrap:wrap}code{background:#f4f4f4;padding:1px 4px}
</style></head><body>
<h1>EdgeArmor evaluation</h1>
<p>${escapeHtml(run.date)} · model <code>${escapeHtml(run.model)}</code> · ${summary.n} cases from ${run.files.map((x) => `<code>${escapeHtml(x)}</code>`).join(', ')} · seed ${run.seed}${run.limit !== null ? ` · limit ${run.limit}` : ''} · options <code>${escapeHtml(JSON.stringify(run.options))}</code></p>
<p>TPR/FPR are at each method's own decision; ROC-AUC, AP and TPR at 1%/5% FPR rank the continuous score (cases without a score rank lowest). Attribution accuracy: among flagged injected cases, the share whose flagged spans (or tools, for tool-description poisoning, when the method names tools) include the carrier.</p>
<table><tr><th>method</th><th>n</th><th>TPR</th><th>FPR</th><th>ROC-AUC</th><th>AP</th><th>TPR@1%FPR</th><th>TPR@5%FPR</th><th>attribution</th><th>errors</th><th>p50 ms</th><th>p95 ms</th><th>what</th></tr>${metricRows}</table>
<div class="curves">${roc}${pr}${suiteBars(methods)}</div>
${perMethod}
</body></html>
`;
}
