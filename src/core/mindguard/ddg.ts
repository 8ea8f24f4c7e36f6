import { MindGuardError } from './errors.js';
import { resolveMindGuardOptions, type MindGuardOptions } from './options.js';
import type {
  AttentionDims,
  Ddg,
  DdgEdge,
  DdgNode,
  FlowKind,
  HeatmapRow,
  MindGuardSpans,
  SinkFilterReport,
  TokenRange,
} from './types.js';

/** Attention values as the engine hands them over; float64 is accepted for tests and reference data. */
export type AttentionTensor = Float32Array | Float64Array;

function badInput(message: string, details: Record<string, unknown> = {}): never {
  throw new MindGuardError('invalid-input', message, details);
}

/**
 * Normalised Gaussian layer weights w_l ∝ exp(-(l - L/2)^2 / (2 sigma^2)) for l = 0..L-1.
 * l is zero-based and the centre is L/2 exactly as written in the paper (so for even L the peak sits on layer L/2,
 * half a layer above the true middle (L-1)/2). The weights are scaled to sum to 1: the paper leaves them unnormalised,
 * which changes neither the sink filter (top-K and entropy are scale-free) nor AIR (a ratio of TAEs), but keeps the
 * aggregated map a convex mix of attention maps, so heatmaps and TAE are comparable across models with different L.
 */
export function gaussianLayerWeights(layers: number, options: MindGuardOptions = {}): number[] {
  if (!Number.isInteger(layers) || layers < 1) badInput(`Invalid layer count: ${layers}. Should be an integer >= 1.`);
  const o = resolveMindGuardOptions(options);
  const sigma = o.sigmaLayers ?? o.sigmaFraction * layers;
  const centre = layers / 2;
  const raw = Array.from({ length: layers }, (_, l) => Math.exp(-((l - centre) ** 2) / (2 * sigma * sigma)));
  const total = raw.reduce((a, b) => a + b, 0);
  if (!(total > 0)) {
    throw new MindGuardError(
      'invalid-options',
      `Invalid MindGuard option sigmaLayers: ${sigma} underflows every weight of ${layers} layers. Should be larger.`,
      { option: 'sigmaLayers', received: sigma },
    );
  }
  return raw.map((w) => w / total);
}

function validateDims(attention: AttentionTensor, dims: AttentionDims): void {
  for (const key of ['layers', 'heads', 'rows', 'cols'] as const) {
    const v = dims[key];
    if (!Number.isInteger(v) || v < 1) badInput(`Invalid attention dims.${key}: ${v}. Should be an integer >= 1.`, { dims });
  }
  const expected = dims.layers * dims.heads * dims.rows * dims.cols;
  if (attention.length !== expected) {
    badInput(
      `Attention has ${attention.length} values but dims ${dims.layers}x${dims.heads}x${dims.rows}x${dims.cols} need ${expected}.`,
      { dims, length: attention.length },
    );
  }
}

/**
 * Pools heads inside each layer, then takes the Gaussian-weighted sum over layers; returns a rows x cols Float64Array.
 * Accumulates in float64 so float32 input loses nothing further.
 */
export function aggregateAttention(
  attention: AttentionTensor,
  dims: AttentionDims,
  options: MindGuardOptions = {},
): Float64Array {
  validateDims(attention, dims);
  const o = resolveMindGuardOptions(options);
  const weights = gaussianLayerWeights(dims.layers, o);
  const plane = dims.rows * dims.cols;
  const out = new Float64Array(plane);
  const layerMax = o.headPooling === 'max' ? new Float64Array(plane) : null;
  for (let l = 0; l < dims.layers; l++) {
    const w = weights[l] ?? 0;
    const headCoef = o.headPooling === 'mean' ? w / dims.heads : w;
    if (layerMax) layerMax.fill(-Infinity);
    for (let h = 0; h < dims.heads; h++) {
      const base = (l * dims.heads + h) * plane;
      for (let k = 0; k < plane; k++) {
        const v = attention[base + k] ?? Number.NaN;
        if (!(v >= 0 && v < Infinity)) {
          badInput(`Attention value ${v} at flat index ${base + k} is not a finite number >= 0.`, { index: base + k });
        }
        if (layerMax) {
          if (v > (layerMax[k] ?? -Infinity)) layerMax[k] = v;
        } else {
          out[k] = (out[k] ?? 0) + headCoef * v;
        }
      }
    }
    if (layerMax) for (let k = 0; k < plane; k++) out[k] = (out[k] ?? 0) + w * (layerMax[k] ?? 0);
  }
  return out;
}

/** Normalised entropy of one column over N rows; 0 when N = 1 (log N = 0) or the column is all zero (no distribution). */
export function columnEntropy(matrix: Float64Array, rows: number, cols: number, col: number): number {
  if (rows <= 1) return 0;
  let total = 0;
  for (let r = 0; r < rows; r++) total += matrix[r * cols + col] ?? 0;
  if (!(total > 0)) return 0;
  let h = 0;
  for (let r = 0; r < rows; r++) {
    const p = (matrix[r * cols + col] ?? 0) / total;
    if (p > 0) h -= p * Math.log(p);
  }
  return h / Math.log(rows);
}

/**
 * Two-stage sink filter (paper): stage 1 takes the top-K columns by attention received over all rows (ties: lower
 * column first); stage 2 zeroes those whose normalised entropy exceeds the threshold. Columns outside the top K are
 * never zeroed. Returns a filtered copy; the input is not modified.
 */
export function applySinkFilter(
  matrix: Float64Array,
  rows: number,
  cols: number,
  options: MindGuardOptions = {},
): { filtered: Float64Array; report: SinkFilterReport } {
  const o = resolveMindGuardOptions(options);
  const sums = new Float64Array(cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) sums[c] = (sums[c] ?? 0) + (matrix[r * cols + c] ?? 0);
  }
  const order = Array.from({ length: cols }, (_, c) => c);
  order.sort((a, b) => (sums[b] ?? 0) - (sums[a] ?? 0) || a - b);
  const candidates = order.slice(0, Math.min(o.sinkTopK, cols));
  const candidateEntropies = candidates.map((c) => columnEntropy(matrix, rows, cols, c));
  const zeroed = candidates.filter((_, i) => (candidateEntropies[i] ?? 0) > o.sinkEntropyThreshold).sort((a, b) => a - b);
  const filtered = Float64Array.from(matrix);
  for (const c of zeroed) for (let r = 0; r < rows; r++) filtered[r * cols + c] = 0;
  return { filtered, report: { candidates, candidateEntropies, zeroed } };
}

function indicesOf(ranges: readonly TokenRange[], limit: number, what: string): number[] {
  const seen = new Set<number>();
  for (const range of ranges) {
    const { start, end } = range;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end > limit) {
      badInput(`Invalid ${what} range [${start}, ${end}). Should be integers with 0 <= start <= end <= ${limit}.`, {
        span: what,
        start,
        end,
        limit,
      });
    }
    for (let i = start; i < end; i++) seen.add(i);
  }
  return [...seen].sort((a, b) => a - b);
}

interface Vertex {
  readonly node: DdgNode;
  readonly indices: readonly number[];
}

/** Total Attention Energy of a source on a target: sum of squared filtered attention over target rows x source columns. */
export function totalAttentionEnergy(
  matrix: Float64Array,
  cols: number,
  targetRows: readonly number[],
  sourceCols: readonly number[],
): number {
  let energy = 0;
  for (const r of targetRows) {
    const base = r * cols;
    for (const c of sourceCols) {
      const v = matrix[base + c] ?? 0;
      energy += v * v;
    }
  }
  return energy;
}

/** Builds the decision-dependence graph (vertices, TAE edges, heatmap rows) from one tool call's attention. */
export function buildDdg(
  attention: AttentionTensor,
  dims: AttentionDims,
  spans: MindGuardSpans,
  options: MindGuardOptions = {},
): Ddg {
  const o = resolveMindGuardOptions(options);
  validateDims(attention, dims);
  const { rows, cols } = dims;

  const names = new Set<string>();
  for (const t of spans.tools) {
    if (typeof t.tool !== 'string' || t.tool.length === 0) badInput('Invalid tool name: every registered tool needs a non-empty name.');
    if (names.has(t.tool)) badInput(`Duplicate tool name "${t.tool}". Tool names must be unique.`, { tool: t.tool });
    names.add(t.tool);
  }

  const sources: Vertex[] = [];
  const userCols = indicesOf(spans.user, cols, 'user');
  sources.push({ node: { id: 'user', kind: 'user', label: 'user', tokenCount: userCols.length }, indices: userCols });
  let invokedToolNode: string | null = null;
  for (const t of spans.tools) {
    const idx = indicesOf(t.ranges, cols, `tool "${t.tool}"`);
    const invoked = t.tool === spans.invokedTool;
    const id = `tool:${t.tool}`;
    if (invoked) invokedToolNode = id;
    sources.push({ node: { id, kind: invoked ? 'invoked-tool' : 'tool', label: t.tool, tokenCount: idx.length }, indices: idx });
  }
  (spans.toolResults ?? []).forEach((ranges, i) => {
    const idx = indicesOf(ranges, cols, `tool result ${i}`);
    sources.push({
      node: { id: `tool-result:${i}`, kind: 'tool-result', label: `tool result ${i + 1}`, tokenCount: idx.length },
      indices: idx,
    });
  });

  const controlRows = indicesOf(spans.controlTarget, rows, 'control target');
  if (controlRows.length === 0) {
    badInput('Empty control target: the call must have at least its tool-name tokens as rows.');
  }
  const dataRows = indicesOf(spans.dataTarget, rows, 'data target');
  const targets: Vertex[] = [
    {
      node: { id: 'target:control', kind: 'target-control', label: `call ${spans.invokedTool}`, tokenCount: controlRows.length },
      indices: controlRows,
    },
  ];
  // A call without arguments has no data-flow decision to attribute.
  if (dataRows.length > 0) {
    targets.push({
      node: { id: 'target:data', kind: 'target-data', label: `${spans.invokedTool} arguments`, tokenCount: dataRows.length },
      indices: dataRows,
    });
  }

  const aggregated = aggregateAttention(attention, dims, o);
  const { filtered, report } = applySinkFilter(aggregated, rows, cols, o);

  const edges: DdgEdge[] = [];
  for (const s of sources) {
    for (const t of targets) {
      edges.push({ source: s.node.id, target: t.node.id, weight: totalAttentionEnergy(filtered, cols, t.indices, s.indices) });
    }
  }

  const rowFlow = new Array<FlowKind | null>(rows).fill(null);
  for (const r of controlRows) rowFlow[r] = 'control';
  for (const r of dataRows) rowFlow[r] = 'data';
  const keep = Math.min(o.heatmapMaxColumns, cols);
  const heatmapRows: HeatmapRow[] = [];
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    const bySource = sources.map((s) => s.indices.reduce((acc, c) => acc + (filtered[base + c] ?? 0), 0));
    const row: HeatmapRow =
      keep > 0
        ? { row: r, target: rowFlow[r] ?? null, bySource, columns: Array.from(filtered.subarray(base, base + keep)) }
        : { row: r, target: rowFlow[r] ?? null, bySource };
    heatmapRows.push(row);
  }

  return {
    nodes: [...sources, ...targets].map((v) => v.node),
    edges,
    heatmap: { sources: sources.map((s) => s.node.id), rows: heatmapRows, truncated: keep > 0 && keep < cols },
    invokedToolNode,
    layerWeights: gaussianLayerWeights(dims.layers, o),
    sinkFilter: report,
  };
}
