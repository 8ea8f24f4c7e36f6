/**
 * The evaluation harness: read cases, sample, run the guard and the baselines, write the JSON
 * results and the HTML report, and return the summary.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EvalCase } from './cases.js';
import type { EvalMethod } from './methods.js';
import type { Progress } from './progress.js';
import { renderHtmlReport } from './report-html.js';
import { buildSummary, runEval, summarizeMethod, type CaseRecord, type EvalSummary, type MethodSummary, type RunInfo } from './runner.js';

export * from './cases.js';
export * from './methods.js';
export * from './progress.js';
export * from './reference-causalarmor.js';
export * from './report-html.js';
export * from './runner.js';

/** What one evaluation produced. */
export interface EvalOutput {
  summary: EvalSummary;
  methods: MethodSummary[];
  records: CaseRecord[];
  /** Paths written, when an output directory was given. */
  files: { results: string; summary: string; report: string } | null;
}

/** Runs the methods (the first is the primary one) over the cases and writes results.json, summary.json and report.html to outDir when given. */
export async function evaluate(
  cases: readonly EvalCase[],
  methods: readonly EvalMethod[],
  run: RunInfo,
  options: { outDir?: string; progress?: Progress; now?: () => number } = {},
): Promise<EvalOutput> {
  const records = await runEval(cases, methods, {
    ...(options.progress ? { progress: options.progress } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const summaries = methods.map((m) => summarizeMethod(records, m, run.familiarityThreshold ?? null));
  const summary = buildSummary(records, summaries, run);
  let files: EvalOutput['files'] = null;
  if (options.outDir !== undefined) {
    mkdirSync(options.outDir, { recursive: true });
    files = { results: join(options.outDir, 'results.json'), summary: join(options.outDir, 'summary.json'), report: join(options.outDir, 'report.html') };
    // Infinite scores (thresholds at +Infinity) are not JSON; they are written as null.
    writeFileSync(files.results, `${JSON.stringify({ run, methods: summaries, cases: records }, null, 1)}\n`);
    writeFileSync(files.summary, `${JSON.stringify(summary, null, 1)}\n`);
    writeFileSync(files.report, renderHtmlReport(summary, summaries, records));
  }
  return { summary, methods: summaries, records, files };
}
