import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MINDGUARD_OPTIONS,
  MindGuardError,
  aggregateAttention,
  analyzeMindGuard,
  anomalyInfluenceRatio,
  applySinkFilter,
  buildDdg,
  gaussianLayerWeights,
  mindguardVerdict,
  resolveMindGuardOptions,
  type AttentionDims,
  type FlowKind,
  type MindGuardOptions,
  type MindGuardSpans,
} from '../../src/core/mindguard/index.js';

/** Float32 input, float64 maths on both sides: only summation order differs. */
const GOLDEN_RELATIVE_TOLERANCE = 1e-9;
const GOLDEN_ABSOLUTE_FLOOR = 1e-15;

interface GoldenCase {
  name: string;
  description: string;
  dims: AttentionDims;
  spans: MindGuardSpans;
  options: MindGuardOptions;
  attention: number[];
  expected: {
    layerWeights: number[];
    candidates: number[];
    candidateEntropies: number[];
    zeroed: number[];
    edges: { source: string; target: string; weight: number }[];
    air: { tool: string; flow: FlowKind; air: number; numerator: number; denominator: number }[];
    verdict: { detected: boolean; poisonedTool: string | null; flow: FlowKind | null; score: number };
    heatmapSources: string[];
    heatmapBySource: number[][];
    heatmapColumns?: number[][];
  };
}

const golden = JSON.parse(
  readFileSync(fileURLToPath(new URL('../golden/mindguard-golden.json', import.meta.url)), 'utf8'),
) as { cases: GoldenCase[] };

function expectClose(actual: number, expected: number, what: string): void {
  const tolerance = GOLDEN_RELATIVE_TOLERANCE * Math.max(Math.abs(actual), Math.abs(expected)) + GOLDEN_ABSOLUTE_FLOOR;
  expect(Math.abs(actual - expected), `${what}: ${actual} vs ${expected}`).toBeLessThanOrEqual(tolerance);
}

function expectAllClose(actual: readonly number[], expected: readonly number[], what: string): void {
  expect(actual.length, what).toBe(expected.length);
  expected.forEach((e, i) => expectClose(actual[i] ?? Number.NaN, e, `${what}[${i}]`));
}

describe('MindGuard against the numpy golden data', () => {
  it('has golden cases to check', () => {
    expect(golden.cases.length).toBeGreaterThanOrEqual(3);
  });

  for (const c of golden.cases) {
    describe(`${c.name}: ${c.description}`, () => {
      const attention = Float32Array.from(c.attention);
      const ddg = buildDdg(attention, c.dims, c.spans, c.options);
      const verdict = mindguardVerdict(ddg, c.options);

      it('weights the layers like the reference', () => {
        expectAllClose(ddg.layerWeights, c.expected.layerWeights, 'layerWeights');
      });

      it('picks the same sink candidates, entropies and zeroed columns', () => {
        expect(ddg.sinkFilter.candidates).toEqual(c.expected.candidates);
        expectAllClose(ddg.sinkFilter.candidateEntropies, c.expected.candidateEntropies, 'entropies');
        expect(ddg.sinkFilter.zeroed).toEqual(c.expected.zeroed);
      });

      it('computes the same Total Attention Energy on every edge', () => {
        expect(ddg.edges.map((e) => [e.source, e.target])).toEqual(c.expected.edges.map((e) => [e.source, e.target]));
        c.expected.edges.forEach((e, i) =>
          expectClose(ddg.edges[i]?.weight ?? Number.NaN, e.weight, `${e.source} -> ${e.target}`),
        );
      });

      it('computes the same AIR for every uninvoked tool and target', () => {
        expect(verdict.air.map((a) => [a.tool, a.flow])).toEqual(c.expected.air.map((a) => [a.tool, a.flow]));
        c.expected.air.forEach((a, i) => {
          const got = verdict.air[i];
          expectClose(got?.air ?? Number.NaN, a.air, `AIR ${a.tool}/${a.flow}`);
          expectClose(got?.numerator ?? Number.NaN, a.numerator, `numerator ${a.tool}/${a.flow}`);
          expectClose(got?.denominator ?? Number.NaN, a.denominator, `denominator ${a.tool}/${a.flow}`);
        });
      });

      it('reaches the same verdict and attribution', () => {
        expect(verdict.detected).toBe(c.expected.verdict.detected);
        expect(verdict.poisonedTool).toBe(c.expected.verdict.poisonedTool);
        expect(verdict.flow).toBe(c.expected.verdict.flow);
        expectClose(verdict.score, c.expected.verdict.score, 'score');
      });

      it('fills the heatmap rows like the reference', () => {
        expect(verdict.heatmap.sources).toEqual(c.expected.heatmapSources);
        c.expected.heatmapBySource.forEach((row, r) =>
          expectAllClose(verdict.heatmap.rows[r]?.bySource ?? [], row, `heatmap row ${r}`),
        );
        c.expected.heatmapColumns?.forEach((row, r) =>
          expectAllClose(verdict.heatmap.rows[r]?.columns ?? [], row, `heatmap columns row ${r}`),
        );
        expect(verdict.heatmap.truncated).toBe(c.expected.heatmapColumns !== undefined);
      });
    });
  }
});

/** One layer, one head: the aggregated map is the input itself (the only layer weight is 1). */
function singleHead(rows: number[][]): { attention: Float64Array; dims: AttentionDims } {
  const cols = rows[0]?.length ?? 0;
  return { attention: Float64Array.from(rows.flat()), dims: { layers: 1, heads: 1, rows: rows.length, cols } };
}

// Columns: 0 user, 1 invoked tool "mkdir", 2 other tool "read_file", 3 the call's own token.
const TINY_SPANS: MindGuardSpans = {
  user: [{ start: 0, end: 1 }],
  tools: [
    { tool: 'mkdir', ranges: [{ start: 1, end: 2 }] },
    { tool: 'read_file', ranges: [{ start: 2, end: 3 }] },
  ],
  invokedTool: 'mkdir',
  controlTarget: [{ start: 0, end: 1 }],
  dataTarget: [{ start: 1, end: 2 }],
};

describe('MindGuard on hand-computed tensors', () => {
  it('computes TAE and AIR that match arithmetic on a one-layer one-head tensor', () => {
    // Column entropies over the 2 rows are 0.811, 0.650, 0.811 and 0: all below 0.85, so nothing is zeroed.
    const { attention, dims } = singleHead([
      [0.2, 0.5, 0.3, 0],
      [0.6, 0.1, 0.1, 0.2],
    ]);
    const ddg = buildDdg(attention, dims, TINY_SPANS);
    expect(ddg.sinkFilter.zeroed).toEqual([]);
    const w = (s: string, t: string): number => ddg.edges.find((e) => e.source === s && e.target === t)?.weight ?? NaN;
    expect(w('user', 'target:control')).toBeCloseTo(0.04, 15);
    expect(w('tool:mkdir', 'target:control')).toBeCloseTo(0.25, 15);
    expect(w('tool:read_file', 'target:control')).toBeCloseTo(0.09, 15);
    expect(w('user', 'target:data')).toBeCloseTo(0.36, 15);
    expect(w('tool:mkdir', 'target:data')).toBeCloseTo(0.01, 15);
    expect(w('tool:read_file', 'target:data')).toBeCloseTo(0.01, 15);

    const verdict = mindguardVerdict(ddg);
    expect(verdict.air.map((a) => [a.tool, a.flow])).toEqual([
      ['read_file', 'control'],
      ['read_file', 'data'],
    ]);
    expect(verdict.air[0]?.air).toBeCloseTo(0.09 / (0.04 + 0.25), 14);
    expect(verdict.air[1]?.air).toBeCloseTo(0.01 / (0.36 + 0.01), 14);
    expect(verdict.score).toBeCloseTo(0.09 / 0.29, 14);
    expect(verdict.detected).toBe(false);
    expect(verdict.poisonedTool).toBeNull();
    expect(verdict.flow).toBeNull();
  });

  it('zeroes a column spread evenly over the rows and keeps a peaked one', () => {
    const uniform = [0.25, 0.25, 0.25, 0.25];
    const peaked = [0.9, 0, 0, 0];
    const rows = 4;
    const matrix = Float64Array.from(Array.from({ length: rows }, (_, r) => [uniform[r] ?? 0, peaked[r] ?? 0]).flat());
    const { filtered, report } = applySinkFilter(matrix, rows, 2);
    // The uniform column receives 1.0 in total, the peaked one 0.9: both are top-K candidates.
    expect(report.candidates).toEqual([0, 1]);
    expect(report.candidateEntropies[0]).toBeCloseTo(1, 15);
    expect(report.candidateEntropies[1]).toBe(0);
    expect(report.zeroed).toEqual([0]);
    for (let r = 0; r < rows; r++) expect(filtered[r * 2]).toBe(0);
    expect(filtered[1]).toBe(0.9);
    expect(matrix[0]).toBe(0.25);
  });

  it('only considers the top-K columns by received attention as sinks', () => {
    // Column 0 is uniform but receives the least attention, so with K = 1 it is not a candidate and survives.
    const matrix = Float64Array.from([0.1, 0.9, 0.1, 0.0]);
    const { report } = applySinkFilter(matrix, 2, 2, { sinkTopK: 1 });
    expect(report.candidates).toEqual([1]);
    expect(report.zeroed).toEqual([]);
  });

  it('never treats a column as a sink when there is a single row or the column is all zero', () => {
    const single = applySinkFilter(Float64Array.from([0.5, 0.5]), 1, 2);
    expect(single.report.candidateEntropies).toEqual([0, 0]);
    expect(single.report.zeroed).toEqual([]);
    const zero = applySinkFilter(Float64Array.from([0, 1, 0, 1]), 2, 2, { sinkEntropyThreshold: 0 });
    expect(zero.report.candidates).toEqual([1, 0]);
    expect(zero.report.zeroed).toEqual([1]);
  });

  it('centres the Gaussian layer weights on L/2 with l counted from 0, normalised to sum 1', () => {
    const w = gaussianLayerWeights(5);
    // sigma = 5/6; layers 2 and 3 sit half a layer either side of 2.5.
    expect(w[2]).toBeCloseTo(w[3] ?? NaN, 15);
    expect(w[1]).toBeCloseTo(w[4] ?? NaN, 15);
    expect(w.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 15);
    const raw = (l: number): number => Math.exp(-((l - 2.5) ** 2) / (2 * (5 / 6) ** 2));
    expect((w[0] ?? NaN) / (w[2] ?? NaN)).toBeCloseTo(raw(0) / raw(2), 14);
    const abs = gaussianLayerWeights(4, { sigmaLayers: 1 });
    expect((abs[0] ?? NaN) / (abs[2] ?? NaN)).toBeCloseTo(Math.exp(-2), 14);
  });

  it('pools heads by mean, max or sum before weighting the layers', () => {
    const dims: AttentionDims = { layers: 1, heads: 2, rows: 1, cols: 2 };
    const attention = Float64Array.from([0.2, 0.8, 0.6, 0.4]);
    const at = (p: 'mean' | 'max' | 'sum'): number[] => Array.from(aggregateAttention(attention, dims, { headPooling: p }));
    expect(at('mean')[0]).toBeCloseTo(0.4, 15);
    expect(at('mean')[1]).toBeCloseTo(0.6, 15);
    expect(at('max')).toEqual([0.6, 0.8]);
    expect(at('sum')[0]).toBeCloseTo(0.8, 15);
    expect(at('sum')[1]).toBeCloseTo(1.2, 15);
  });
});

/**
 * A call over 10 context columns and 4 action rows: user 0-1, "mkdir" 2-3 (invoked), "read_file" 4-5, "send_email" 6-7.
 * Rows 0-1 choose the tool, rows 2-3 are argument values. `pull` says which columns each target leans on.
 */
function scenario(pull: { control: number[]; data: number[] }): { attention: Float64Array; dims: AttentionDims } {
  const cols = 10;
  const rows = [0, 1, 2, 3].map((r) => {
    const focus = r < 2 ? pull.control : pull.data;
    const row = Array.from({ length: cols }, (_, c) => (focus.includes(c) ? 1 : 0.02));
    const total = row.reduce((a, b) => a + b, 0);
    return row.map((v) => v / total);
  });
  return singleHead(rows);
}

const SCENARIO_SPANS: MindGuardSpans = {
  user: [{ start: 0, end: 2 }],
  tools: [
    { tool: 'mkdir', ranges: [{ start: 2, end: 4 }] },
    { tool: 'read_file', ranges: [{ start: 4, end: 6 }] },
    { tool: 'send_email', ranges: [{ start: 6, end: 8 }] },
  ],
  invokedTool: 'mkdir',
  controlTarget: [{ start: 0, end: 2 }],
  dataTarget: [{ start: 2, end: 4 }],
};

describe('MindGuard verdicts', () => {
  it('names the poisoned tool with flow control when its description pulls the tool-choice tokens', () => {
    const { attention, dims } = scenario({ control: [4, 5], data: [0, 1] });
    const v = analyzeMindGuard(attention, dims, SCENARIO_SPANS);
    expect(v.detected).toBe(true);
    expect(v.poisonedTool).toBe('read_file');
    expect(v.flow).toBe('control');
    expect(v.score).toBeGreaterThan(DEFAULT_MINDGUARD_OPTIONS.airThreshold);
  });

  it('names the poisoned tool with flow data when its description pulls the argument tokens', () => {
    const { attention, dims } = scenario({ control: [0, 2, 3], data: [6, 7] });
    const v = analyzeMindGuard(attention, dims, SCENARIO_SPANS);
    expect(v.detected).toBe(true);
    expect(v.poisonedTool).toBe('send_email');
    expect(v.flow).toBe('data');
  });

  it('stays below tau when the decision follows the user and the invoked tool', () => {
    const { attention, dims } = scenario({ control: [0, 1, 2, 3], data: [0, 1] });
    const v = analyzeMindGuard(attention, dims, SCENARIO_SPANS);
    expect(v.detected).toBe(false);
    expect(v.score).toBeLessThan(DEFAULT_MINDGUARD_OPTIONS.airThreshold);
    expect(v.poisonedTool).toBeNull();
    expect(v.flow).toBeNull();
  });

  it('skips the data-flow target when the call has no arguments', () => {
    const { attention, dims } = scenario({ control: [4, 5], data: [0, 1] });
    const v = analyzeMindGuard(attention, dims, { ...SCENARIO_SPANS, dataTarget: [] });
    expect(v.nodes.map((n) => n.id)).not.toContain('target:data');
    expect(v.edges.every((e) => e.target === 'target:control')).toBe(true);
    expect(v.air.every((a) => a.flow === 'control')).toBe(true);
    expect(v.heatmap.rows.map((r) => r.target)).toEqual(['control', 'control', null, null]);
  });

  it('uses only the user in the denominator when the invoked tool is not registered', () => {
    const { attention, dims } = scenario({ control: [0, 1, 4], data: [0, 1] });
    const spans: MindGuardSpans = { ...SCENARIO_SPANS, invokedTool: 'delete_repo' };
    const ddg = buildDdg(attention, dims, spans);
    expect(ddg.invokedToolNode).toBeNull();
    expect(ddg.nodes.some((n) => n.kind === 'invoked-tool')).toBe(false);
    const v = mindguardVerdict(ddg);
    // All three registered tools are uninvoked, so all are scored.
    expect(new Set(v.air.map((a) => a.tool))).toEqual(new Set(['mkdir', 'read_file', 'send_email']));
    const user = ddg.edges.find((e) => e.source === 'user' && e.target === 'target:control')?.weight ?? NaN;
    for (const a of v.air.filter((x) => x.flow === 'control')) expect(a.denominator).toBe(user);
  });

  it('returns Infinity for influence with a zero denominator and 0 when there is no attention at all', () => {
    expect(anomalyInfluenceRatio(0.3, 0)).toBe(Infinity);
    expect(anomalyInfluenceRatio(0, 0)).toBe(0);
    expect(anomalyInfluenceRatio(1, 4)).toBe(0.25);
  });

  it('marks the invoked tool and labels every vertex kind in the graph it hands to the demo', () => {
    const { attention, dims } = scenario({ control: [4, 5], data: [0, 1] });
    const v = analyzeMindGuard(attention, dims, { ...SCENARIO_SPANS, toolResults: [[{ start: 8, end: 10 }]] }, {
      heatmapMaxColumns: 4,
    });
    expect(v.nodes.map((n) => [n.id, n.kind, n.tokenCount])).toEqual([
      ['user', 'user', 2],
      ['tool:mkdir', 'invoked-tool', 2],
      ['tool:read_file', 'tool', 2],
      ['tool:send_email', 'tool', 2],
      ['tool-result:0', 'tool-result', 2],
      ['target:control', 'target-control', 2],
      ['target:data', 'target-data', 2],
    ]);
    expect(v.edges).toHaveLength(5 * 2);
    expect(v.heatmap.rows[0]?.columns).toHaveLength(4);
    expect(v.heatmap.truncated).toBe(true);
    expect(structuredClone(v)).toEqual(v);
  });
});

describe('MindGuard options and input validation', () => {
  it('fills every default and keeps the defaults frozen', () => {
    expect(resolveMindGuardOptions()).toEqual({
      sigmaFraction: 1 / 6,
      sigmaLayers: null,
      headPooling: 'mean',
      sinkTopK: 80,
      sinkEntropyThreshold: 0.85,
      airThreshold: 0.5,
      heatmapMaxColumns: 0,
    });
    expect(Object.isFrozen(DEFAULT_MINDGUARD_OPTIONS)).toBe(true);
  });

  it('does not mutate its input and its output survives structuredClone', () => {
    const input: MindGuardOptions = { airThreshold: 0.7 };
    const resolved = resolveMindGuardOptions(input);
    expect(input).toEqual({ airThreshold: 0.7 });
    expect(structuredClone(resolved)).toEqual(resolved);
  });

  it.each([
    [{ sinkTopK: 1.5 }, 'Invalid option sinkTopK: received 1.5; allowed: an integer >= 0 (0 disables the sink filter).'],
    [{ headPooling: 'median' }, 'Invalid option headPooling: received "median"; allowed: one of "mean", "max", "sum".'],
    [{ sinkEntropyThreshold: 1.2 }, 'Invalid option sinkEntropyThreshold: received 1.2; allowed: a number in [0, 1] (normalised entropy).'],
    [{ airThreshold: -1 }, 'Invalid option airThreshold: received -1; allowed: a finite number >= 0.'],
    [{ sigmaFraction: 0 }, 'Invalid option sigmaFraction: received 0; allowed: a finite number > 0.'],
    [{ sigmaLayers: Number.NaN }, 'Invalid option sigmaLayers: received NaN; allowed: a finite number > 0.'],
    [{ tau: 0.5 }, /^Unknown option tau; known options are sigmaFraction, .*airThreshold/],
  ])('rejects %o with a message saying what was received and what is allowed', (options, message) => {
    expect(() => resolveMindGuardOptions(options as MindGuardOptions)).toThrow(message);
    try {
      resolveMindGuardOptions(options as MindGuardOptions);
    } catch (e) {
      expect(e).toBeInstanceOf(MindGuardError);
      expect((e as MindGuardError).code).toBe('invalid-options');
    }
  });

  it('rejects attention whose length does not match its dims', () => {
    const dims: AttentionDims = { layers: 1, heads: 1, rows: 2, cols: 3 };
    expect(() => buildDdg(new Float32Array(5), dims, TINY_SPANS)).toThrow(/has 5 values but dims 1x1x2x3 need 6/);
  });

  it('rejects a span outside the attention and a duplicate tool name', () => {
    const { attention, dims } = singleHead([
      [0.2, 0.5, 0.3, 0],
      [0.6, 0.1, 0.1, 0.2],
    ]);
    expect(() => buildDdg(attention, dims, { ...TINY_SPANS, user: [{ start: 0, end: 9 }] })).toThrow(
      /Invalid user range \[0, 9\)\. Should be integers with 0 <= start <= end <= 4/,
    );
    expect(() =>
      buildDdg(attention, dims, { ...TINY_SPANS, tools: [...TINY_SPANS.tools, { tool: 'mkdir', ranges: [] }] }),
    ).toThrow(/Duplicate tool name "mkdir"/);
    expect(() => buildDdg(attention, dims, { ...TINY_SPANS, controlTarget: [] })).toThrow(/Empty control target/);
  });

  it('rejects attention values that are negative or not finite', () => {
    const { attention, dims } = singleHead([
      [0.2, 0.5, 0.3, 0],
      [0.6, Number.NaN, 0.1, 0.2],
    ]);
    expect(() => buildDdg(attention, dims, TINY_SPANS)).toThrow(/Attention value NaN at flat index 5/);
  });
});
