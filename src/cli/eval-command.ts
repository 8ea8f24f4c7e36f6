/**
 * `edgearmor eval <cases.jsonl> [...]`: runs the guard and the baselines on labelled guard cases and
 * writes results.json, summary.json and a self-contained report.html.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  createConstantBaseline,
  createProgress,
  createRegexBaseline,
  evaluate,
  guardMethods,
  readEvalCases,
  sampleCases,
  type EvalCase,
  type EvalMethod,
  type BlockedBy,
  type EvalSummary,
  type MethodSummary,
} from '../eval/index.js';
import { resolveOptions } from '../core/options.js';
import { REWRITES, rewriteCase, type RewriteName } from '../eval/rewrites.js';
import { EXTERNAL_OPTIONS } from '../core/option-sources.js';
import { judgedOptions } from '../core/model-options.js';
import { fail, guardOptionsFrom, GUARD_FLAGS, REMOTE_PROXY_USAGE, withNegativeNumbers } from './flags.js';
import { modelOptionsLine } from './report.js';

const EVAL_USAGE = `usage: edgearmor eval <cases.jsonl> [more.jsonl ...] [options]

Runs the guard and the baselines on labelled guard cases (label injected|benign, optional suite,
attack, pipeline, injected_in, poisoned_tool) and reports TPR, FPR, ROC-AUC, AP, TPR at 1%/5% FPR,
attribution accuracy, confusion tables per suite/attack/pipeline and latency.

options:
  --json                     print the summary object as the last line of stdout
  --limit <N>                evaluate a deterministic sample of N cases (stratified by file and label)
  --rewrites <list>          also check each sampled case rewritten to dodge one-span-at-a-time attribution:
                             all, or a comma list of ${REWRITES.join(', ')};
                             each rewrite is its own set (<set>+<rewrite>)
  --seed <S>                 sample seed (default 0)
  --out <dir>                where results.json, summary.json and report.html go (default edgearmor-eval/<date>/)
  --baselines <list>         regex,reference,never,always (default: all), or none
  --no-baselines             same as --baselines none
  --model <dir>              a model directory (default: the embedded model)
  --variant <q4|fp32|fp16|q4f16>  model file variant (default q4)
  --config <file>            options file (default ./edgearmor.config.json when present)
  --${EXTERNAL_OPTIONS.map((o) => o.flag).join(', --')}:
                             the guard's options, as for check (edgearmor --help)
${REMOTE_PROXY_USAGE}
                             (the reference baseline still runs --model locally)
  -h, --help`;

const BASELINES = ['regex', 'reference', 'never', 'always'] as const;
type BaselineName = (typeof BASELINES)[number];

function parseBaselines(value: string | undefined, off: boolean | undefined): BaselineName[] {
  if (off) return [];
  if (value === undefined) return [...BASELINES];
  if (value === 'none') return [];
  const names = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(BASELINES as readonly string[]).includes(n)) fail(`--baselines: received "${n}"; allowed: ${BASELINES.join(', ')}, none`);
  return names as BaselineName[];
}

function parseRewrites(value: string): RewriteName[] {
  if (value === 'all') return [...REWRITES];
  const names = value.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = names.find((n) => !(REWRITES as readonly string[]).includes(n));
  if (bad !== undefined || names.length === 0) fail(`--rewrites: received "${bad ?? value}"; allowed: all, or a comma list of ${REWRITES.join(', ')}`);
  return names as RewriteName[];
}

function intFlag(value: string | undefined, flag: string, min: number): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || n < min) fail(`${flag}: received "${value}"; allowed: an integer >= ${min}`);
  return n;
}

/** Runs the eval subcommand with its arguments. */
export async function evalCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: withNegativeNumbers(args),
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      limit: { type: 'string' },
      rewrites: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      baselines: { type: 'string' },
      'no-baselines': { type: 'boolean' },
      ...GUARD_FLAGS,
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${EVAL_USAGE}\n`);
    return;
  }
  if (positionals.length === 0) fail('eval takes at least one cases file; see edgearmor eval --help');
  const limit = intFlag(values.limit, '--limit', 1);
  const seed = intFlag(values.seed, '--seed', 0) ?? 0;
  const baselines = parseBaselines(values.baselines, values['no-baselines']);
  const { options, variant, remoteProxy, chatTemplate } = guardOptionsFrom(values);
  const all: EvalCase[] = positionals.flatMap((p) => readEvalCases(p));
  const sampled = sampleCases(all, limit, seed);
  const rewrites = values.rewrites === undefined ? [] : parseRewrites(values.rewrites);
  const cases = [...sampled, ...rewrites.flatMap((r) => sampled.flatMap((c) => rewriteCase(c, r) ?? []))];
  const date = new Date().toISOString().slice(0, 10);
  const outDir = values.out ?? join('edgearmor-eval', date);

  // The engine (onnxruntime, the tokenizer) loads only after the input has been validated.
  const { createNodeGuard, embeddedModelDir } = await import('../node.js');
  const modelDir = values.model ?? embeddedModelDir();
  const guard = createNodeGuard({ ...options, modelDir, modelVariant: variant, ...(remoteProxy ? { remoteProxy } : {}), ...(chatTemplate !== undefined ? { chatTemplate } : {}) });
  const status = await guard.ready;
  const methods: EvalMethod[] = [...guardMethods(guard, undefined, undefined, judgedOptions(options, status.modelOptions))];
  let disposeReference: (() => Promise<void>) | null = null;
  for (const b of baselines) {
    if (b === 'regex') methods.push(createRegexBaseline());
    if (b === 'never') methods.push(createConstantBaseline(false));
    if (b === 'always') methods.push(createConstantBaseline(true));
    if (b === 'reference') {
      const { createReferenceFromModel } = await import('../eval/reference-engine.js');
      // The guard's tau: the model directory's own when the caller set none.
      const ref = await createReferenceFromModel(modelDir, variant, status.modelOptions?.applied.tau ?? resolveOptions(options).tau);
      methods.push(ref.method);
      disposeReference = ref.dispose;
    }
  }
  if (status.modelOptions) process.stderr.write(`edgearmor eval: ${modelOptionsLine(status.modelOptions)}\n`);
  process.stderr.write(`edgearmor eval: ${cases.length} of ${all.length} cases, methods ${methods.map((m) => m.name).join(', ')}, model ${status.model ?? modelDir} on ${status.backend ?? '?'}\n`);
  const out = await evaluate(
    cases,
    methods,
    { date, files: positionals, model: `${status.model ?? modelDir} (${variant})`, seed, limit, options: options as Record<string, unknown>, familiarityThreshold: status.familiarity.threshold },
    { outDir, progress: createProgress(cases.length, process.stderr) },
  );
  await guard.dispose();
  await disposeReference?.();
  const lines = out.methods.map(
    (m) =>
      `${m.method.padEnd(22)} TPR ${fmt(m.tpr)}  FPR ${fmt(m.fpr)}  AUC ${fmt(m.roc_auc)}  AP ${fmt(m.average_precision)}  TPR@1% ${fmt(m.tpr_at_1pct_fpr)}  TPR@5% ${fmt(m.tpr_at_5pct_fpr)}  attr ${fmt(m.attribution_accuracy)}  p50 ${fmt(m.latency_ms.p50, 0)}ms`,
  );
  process.stdout.write(`${lines.join('\n')}\n\n${setTable(out.summary)}\n${blockedByLine(out.methods.find((m) => m.method === out.summary.method))}wrote ${out.files!.results}, ${out.files!.summary}, ${out.files!.report}\n`);
  if (values.json) process.stdout.write(`${JSON.stringify(out.summary)}\n`);
}

/** What flagged the primary method's blocks: a message (the span rule) or only a tool (description, MindGuard). */
function blockedByLine(m: MethodSummary | undefined): string {
  if (!m) return '';
  const part = (b: BlockedBy) => `${b.message} by a message, ${b.toolOnly} by a tool only${b.neither > 0 ? `, ${b.neither} by neither` : ''}`;
  return `${m.method} blocked: injected ${part(m.blocked_by.injected)}; benign ${part(m.blocked_by.benign)}\n`;
}

/**
 * The primary method per evaluation set, one row each: held-out sets (tools, domains, suites the model
 * never trained on; the model card says which) beside in-distribution ones. `unfamiliar` is the share of
 * checks whose call the proxy predicted below its familiarityThreshold.
 */
function setTable(summary: EvalSummary): string {
  const rows = Object.entries(summary.by_set);
  const width = Math.max(14, ...rows.map(([k]) => k.length));
  const head = `${'set'.padEnd(width)}  ${'n'.padStart(5)}  TPR    FPR    FPR clean (n)   AUC    TPR@5%  unfamiliar`;
  const body = rows.map(
    ([set, v]) =>
      `${set.padEnd(width)}  ${String(v.n).padStart(5)}  ${fmt(v.tpr)}  ${fmt(v.fpr)}  ${fmt(v.clean_fpr)} (${String(v.clean_benign).padStart(4)})  ${fmt(v.roc_auc)}  ${fmt(v.tpr_at_5pct_fpr)}  ${fmt(v.below_familiarity)}`,
  );
  return [`${summary.method} per set:`, head, ...body].join('\n');
}

function fmt(x: number | null, digits = 3): string {
  return x === null ? '  -  ' : x.toFixed(digits);
}
