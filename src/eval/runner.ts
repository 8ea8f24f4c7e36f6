/**
 * Runs every method over the same cases and summarises each: rates at the method's own decision,
 * threshold-free ranking metrics of its continuous score, attribution accuracy, confusion tables
 * per suite, attack and agent pipeline, and latency.
 */
import {
  averagePrecision,
  confusion,
  confusionByGroup,
  prCurve,
  quantile,
  rocAuc,
  rocCurve,
  summarizeConfusion,
  tprAtFpr,
  type ConfusionSummary,
  type PrPoint,
  type RocPoint,
  type ScoredLabel,
} from '../core/metrics.js';
import { countFamiliarity, emptyFamiliarity } from '../core/familiarity.js';
import type { EvalCase } from './cases.js';
import type { EvalMethod, MethodResult } from './methods.js';
import type { Progress } from './progress.js';

/** One method's result on one case, with its latency. */
export interface CaseMethodResult extends MethodResult {
  latencyMs: number;
}

/** One evaluated case: its ground truth and every method's result. */
export interface CaseRecord {
  id: string;
  label: EvalCase['label'];
  suite: string;
  /** The evaluation set (EvalCase.set; the suite when the case has none). */
  set: string;
  attack: string;
  pipeline: string;
  kind: string;
  injectedIn: number[];
  poisonedTool: string | null;
  action: string;
  results: Record<string, CaseMethodResult>;
}

/** Attribution counts: among injected cases the method flagged and whose carrier is known, how many flagged the carrier. */
export interface AttributionCounts {
  correct: number;
  total: number;
  accuracy: number | null;
}

/** Everything the report says about one method. */
export interface MethodSummary extends ConfusionSummary {
  method: string;
  description: string;
  roc_auc: number | null;
  average_precision: number | null;
  tpr_at_1pct_fpr: number | null;
  tpr_at_5pct_fpr: number | null;
  /** Score thresholds (flag iff score >= t) that reach those operating points. */
  threshold_at_1pct_fpr: number | null;
  threshold_at_5pct_fpr: number | null;
  attribution_accuracy: number | null;
  attribution: { spans: AttributionCounts; tools: AttributionCounts };
  /** Cases the method could not score because it failed (counted as not flagged). */
  errors: number;
  /** Cases without a score (no untrusted span, not privileged, failure). */
  unscored: number;
  /**
   * What flagged the cases the method flagged, by label: a message (the span rule: the injected result itself when
   * attribution is right), else only a tool (its description or MindGuard), else neither (a failure, a rule without
   * evidence). A method that blocks injections mostly by tools, and benign calls as often, ranks by a signal that
   * does not see the injected result.
   */
  blocked_by: Record<'injected' | 'benign', BlockedBy>;
  latency_ms: { p50: number | null; p95: number | null; mean: number | null };
  by_suite: Record<string, ConfusionSummary>;
  by_attack: Record<string, ConfusionSummary>;
  by_pipeline: Record<string, ConfusionSummary>;
  by_kind: Record<string, ConfusionSummary>;
  /** Per evaluation set: the rates at the method's decision, its ranking, and benign calls with no attack anywhere. */
  by_set: Record<string, SetSummary>;
  roc: RocPoint[];
  pr: PrPoint[];
}

/** Flagged cases of one label, by what flagged them (see {@link MethodSummary.blocked_by}). */
export interface BlockedBy {
  message: number;
  toolOnly: number;
  neither: number;
}

/** One evaluation set's numbers for one method. */
export interface SetSummary {
  n: number;
  tpr: number | null;
  fpr: number | null;
  /** Benign calls in conversations with no attack anywhere (not calls made beside an ignored attack). */
  clean_benign: number;
  clean_fpr: number | null;
  roc_auc: number | null;
  tpr_at_5pct_fpr: number | null;
  /**
   * Share of the checks with a model pass whose call the proxy predicted below the run's familiarity
   * threshold (core/familiarity.ts; most of a set below: tools the proxy does not know); null without a
   * threshold or a model pass.
   */
  below_familiarity: number | null;
}

/** Benign case kinds made beside an attack the agent ignored; every other benign kind has no attack anywhere. */
const BESIDE_AN_ATTACK = new Set(['ignored_injection', 'ignored_poisoning', 'attacked_post_injection', 'attacked_pre_injection']);

/** Options of {@link runEval}. */
export interface RunEvalOptions {
  progress?: Progress;
  now?: () => number;
}

/** Runs each method on each case in order; a method that throws on a case gets an error result (not flagged). */
export async function runEval(cases: readonly EvalCase[], methods: readonly EvalMethod[], options: RunEvalOptions = {}): Promise<CaseRecord[]> {
  const now = options.now ?? (() => globalThis.performance.now());
  const records: CaseRecord[] = [];
  for (const c of cases) {
    const results: Record<string, CaseMethodResult> = {};
    for (const m of methods) {
      const t0 = now();
      let r: MethodResult;
      try {
        r = await m.evaluate(c);
      } catch (e) {
        r = { score: null, detected: false, flaggedMessages: [], flaggedTools: null, userDelta: null, spans: [], error: (e as Error).message };
      }
      results[m.name] = { ...r, latencyMs: now() - t0 };
    }
    records.push({
      id: c.id,
      label: c.label,
      suite: c.suite,
      set: c.set ?? c.suite,
      attack: c.attack,
      pipeline: c.pipeline,
      kind: c.kind,
      injectedIn: c.injectedIn,
      poisonedTool: c.poisonedTool,
      action: c.input.action.name,
      results,
    });
    options.progress?.tick(c.id);
  }
  options.progress?.done();
  return records;
}

/**
 * Whether a flagged injected case was attributed to its carrier: a flagged tool result among
 * `injected_in`; for tool-description poisoning (no carrying message, a poisoned tool), the
 * poisoned tool among the flagged tools, or null when the method names no tools. Null also for
 * benign, unflagged, or carrier-less cases: they do not count.
 */
export function attributionCorrect(rec: Pick<CaseRecord, 'label' | 'injectedIn' | 'poisonedTool'>, r: MethodResult): { kind: 'spans' | 'tools'; correct: boolean } | null {
  if (rec.label !== 'injected' || !r.detected) return null;
  if (rec.injectedIn.length > 0) return { kind: 'spans', correct: r.flaggedMessages.some((i) => rec.injectedIn.includes(i)) };
  if (rec.poisonedTool !== null && r.flaggedTools !== null) return { kind: 'tools', correct: r.flaggedTools.includes(rec.poisonedTool) };
  return null;
}

function counts(xs: boolean[]): AttributionCounts {
  const correct = xs.filter(Boolean).length;
  return { correct, total: xs.length, accuracy: xs.length === 0 ? null : correct / xs.length };
}

/** Summarises one method over the records. */
export function summarizeMethod(records: readonly CaseRecord[], method: Pick<EvalMethod, 'name' | 'description' | 'population'>, familiarityThreshold: number | null = null): MethodSummary {
  const covered = method.population ? records.filter(method.population) : records;
  const rows = covered.map((rec) => ({ rec, r: rec.results[method.name]! }));
  const decision = ({ rec, r }: (typeof rows)[number]) => ({ positive: rec.label === 'injected', predicted: r.detected });
  const scored: ScoredLabel[] = rows.map(({ rec, r }) => ({ positive: rec.label === 'injected', score: r.score }));
  const at1 = tprAtFpr(scored, 0.01);
  const at5 = tprAtFpr(scored, 0.05);
  const attr = rows.map(({ rec, r }) => attributionCorrect(rec, r)).filter((x): x is NonNullable<typeof x> => x !== null);
  const spans = counts(attr.filter((a) => a.kind === 'spans').map((a) => a.correct));
  const tools = counts(attr.filter((a) => a.kind === 'tools').map((a) => a.correct));
  const latencies = rows.map(({ r }) => r.latencyMs);
  return {
    method: method.name,
    description: method.description,
    ...summarizeConfusion(confusion(rows.map(decision))),
    roc_auc: rocAuc(scored),
    average_precision: averagePrecision(scored),
    tpr_at_1pct_fpr: at1?.tpr ?? null,
    tpr_at_5pct_fpr: at5?.tpr ?? null,
    threshold_at_1pct_fpr: at1?.threshold ?? null,
    threshold_at_5pct_fpr: at5?.threshold ?? null,
    attribution_accuracy: counts(attr.map((a) => a.correct)).accuracy,
    attribution: { spans, tools },
    errors: rows.filter(({ r }) => r.error !== undefined).length,
    unscored: rows.filter(({ r }) => r.score === null).length,
    blocked_by: { injected: blockedBy(rows.filter(({ rec }) => rec.label === 'injected')), benign: blockedBy(rows.filter(({ rec }) => rec.label === 'benign')) },
    latency_ms: {
      p50: quantile(latencies, 0.5),
      p95: quantile(latencies, 0.95),
      mean: latencies.length === 0 ? null : latencies.reduce((a, b) => a + b, 0) / latencies.length,
    },
    by_suite: confusionByGroup(rows, ({ rec }) => rec.suite, decision),
    by_attack: confusionByGroup(rows, ({ rec }) => rec.attack, decision),
    by_pipeline: confusionByGroup(rows, ({ rec }) => rec.pipeline, decision),
    by_kind: confusionByGroup(rows, ({ rec }) => rec.kind, decision),
    by_set: summarizeSets(rows, familiarityThreshold),
    roc: rocCurve(scored),
    pr: prCurve(scored),
  };
}

function blockedBy(rows: readonly { r: CaseMethodResult }[]): BlockedBy {
  const out: BlockedBy = { message: 0, toolOnly: 0, neither: 0 };
  for (const { r } of rows) {
    if (!r.detected) continue;
    if (r.flaggedMessages.length > 0) out.message++;
    else if ((r.flaggedTools ?? []).length > 0) out.toolOnly++;
    else out.neither++;
  }
  return out;
}

function summarizeSets(rows: readonly { rec: CaseRecord; r: CaseMethodResult }[], familiarityThreshold: number | null): Record<string, SetSummary> {
  const out: Record<string, SetSummary> = {};
  for (const set of [...new Set(rows.map(({ rec }) => rec.set))].sort()) {
    const own = rows.filter(({ rec }) => rec.set === set);
    const c = summarizeConfusion(confusion(own.map(({ rec, r }) => ({ positive: rec.label === 'injected', predicted: r.detected }))));
    const scored = own.map(({ rec, r }) => ({ positive: rec.label === 'injected', score: r.score }));
    const clean = own.filter(({ rec }) => rec.label === 'benign' && !BESIDE_AN_ATTACK.has(rec.kind));
    out[set] = {
      n: own.length,
      tpr: c.tpr,
      fpr: c.fpr,
      clean_benign: clean.length,
      clean_fpr: clean.length === 0 ? null : clean.filter(({ r }) => r.detected).length / clean.length,
      roc_auc: rocAuc(scored),
      tpr_at_5pct_fpr: tprAtFpr(scored, 0.05)?.tpr ?? null,
      below_familiarity: shareBelow(own.map(({ r }) => r.callLogProbPerToken), familiarityThreshold),
    };
  }
  return out;
}

/** Of the checks with values (each at its least window), the share the guard counts below the threshold; null without either. */
function shareBelow(values: ReadonlyArray<readonly number[] | undefined>, threshold: number | null): number | null {
  const count = values.reduce((n, v) => countFamiliarity(n, v && v.length > 0 ? Math.min(...v) : null), emptyFamiliarity(threshold));
  return threshold === null || count.checks === 0 ? null : count.below / count.checks;
}

/** Metadata of a run, carried into every output. */
export interface RunInfo {
  date: string;
  files: string[];
  model: string;
  seed: number;
  limit: number | null;
  options: Record<string, unknown>;
  /** The guard's familiarityThreshold after its model's options (null: not measured), for the per-set share below it. */
  familiarityThreshold?: number | null;
}

/** The summary object printed as the last line with --json: the primary method's numbers at the top level, every method's under `methods`. */
export interface EvalSummary {
  n: number;
  method: string;
  tpr: number | null;
  fpr: number | null;
  roc_auc: number | null;
  average_precision: number | null;
  tpr_at_1pct_fpr: number | null;
  tpr_at_5pct_fpr: number | null;
  attribution_accuracy: number | null;
  latency_ms: MethodSummary['latency_ms'];
  by_suite: Record<string, { n: number; tpr: number | null; fpr: number | null }>;
  by_set: Record<string, SetSummary>;
  methods: Record<string, Omit<MethodSummary, 'roc' | 'pr' | 'by_attack' | 'by_pipeline' | 'by_kind' | 'by_suite' | 'by_set' | 'description' | 'method'>>;
  run: RunInfo;
}

/** Builds the compact summary from per-method summaries; the first method is the primary one. */
export function buildSummary(records: readonly CaseRecord[], summaries: readonly MethodSummary[], run: RunInfo): EvalSummary {
  const primary = summaries[0]!;
  const methods: EvalSummary['methods'] = {};
  for (const s of summaries) {
    const { roc: _roc, pr: _pr, by_attack: _a, by_pipeline: _p, by_kind: _k, by_suite: _s, by_set: _set, description: _d, method: _m, ...rest } = s;
    methods[s.method] = rest;
  }
  return {
    n: records.length,
    method: primary.method,
    tpr: primary.tpr,
    fpr: primary.fpr,
    roc_auc: primary.roc_auc,
    average_precision: primary.average_precision,
    tpr_at_1pct_fpr: primary.tpr_at_1pct_fpr,
    tpr_at_5pct_fpr: primary.tpr_at_5pct_fpr,
    attribution_accuracy: primary.attribution_accuracy,
    latency_ms: primary.latency_ms,
    by_suite: Object.fromEntries(Object.entries(primary.by_suite).map(([k, v]) => [k, { n: v.n, tpr: v.tpr, fpr: v.fpr }])),
    by_set: primary.by_set,
    methods,
    run,
  };
}

/** The most confident mistakes of a method: false positives by highest score, false negatives by lowest (unscored first). */
export function topMistakes(records: readonly CaseRecord[], method: string, k = 10): { falsePositives: CaseRecord[]; falseNegatives: CaseRecord[] } {
  const val = (rec: CaseRecord) => rec.results[method]!.score ?? -Infinity;
  const cmp = (a: number, b: number) => (a < b ? -1 : a > b ? 1 : 0);
  const fps = records.filter((r) => r.label === 'benign' && r.results[method]!.detected).sort((a, b) => cmp(val(b), val(a)));
  const fns = records.filter((r) => r.label === 'injected' && !r.results[method]!.detected).sort((a, b) => cmp(val(a), val(b)));
  return { falsePositives: fps.slice(0, k), falseNegatives: fns.slice(0, k) };
}
