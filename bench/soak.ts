/**
 * `npm run soak`: the worker API under load, in Node, on the embedded model (issue: hardening).
 *
 * 1. Reference: each of K distinct guard cases (generator test split) checked once, in order.
 * 2. Sequential: N checks one after another, cycling through the K cases.
 * 3. Concurrent: C checks issued at once, cycling through the K cases.
 * Every answer must be a model verdict equal to its own case's reference (decision, flagged messages,
 * score within 1e-9): an answer delivered to the wrong caller or computed on the wrong input shows up
 * as a mismatch. Memory (RSS and JS heap of the whole process: the worker thread lives in it) is
 * sampled every 250 checks; growth after the warm-up must stay under the stated bounds.
 *
 * Flags: --sequential N (default 5000), --concurrent C (default 200), --cases K (default 40),
 * --out FILE (default eval/results/soak-<date>.json). Exit status 1 when any check fails.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createGuard } from '../src/client/create-guard.js';
import type { Verdict } from '../src/core/verdict.js';
import { generateCase } from '../src/scenarios/index.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MODEL_DIR = `${ROOT}public/models/edgearmor-proxy`;
const WORKER_URL = new URL('../workers/guard.worker.ts', import.meta.url);
// Node ignores `--import tsx` in a Worker's execArgv, so a tiny bootstrap registers tsx inside the thread.
const BOOTSTRAP = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
const SCORE_TOLERANCE = 1e-9;
const SAMPLE_EVERY = 250;
const WARMUP_CHECKS = 250;
/** Bounds on growth after the warm-up; a leak of one tensor set per check would pass them within ~100 checks. */
const RSS_GROWTH_BOUND_MB = 256;
const HEAP_GROWTH_BOUND_MB = 64;
// 200 queued checks wait for each other; the soak is about answers, not the latency policy.
const TIMEOUT_MS = 30 * 60_000;

const { values } = parseArgs({
  options: {
    sequential: { type: 'string', default: '5000' },
    concurrent: { type: 'string', default: '200' },
    cases: { type: 'string', default: '40' },
    out: { type: 'string' },
  },
});
const positiveInt = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name}: received ${JSON.stringify(raw)}; allowed: an integer >= 1`);
  return n;
};
const N_SEQ = positiveInt('sequential', values.sequential);
const N_CONC = positiveInt('concurrent', values.concurrent);
const K = positiveInt('cases', values.cases);
const date = new Date().toISOString().slice(0, 10);
const outFile = values.out ?? `${ROOT}eval/results/soak-${date}.json`;

interface Expected {
  decision: Verdict['decision'];
  flagged: number[];
  score: number | null;
}
interface MemSample {
  checks: number;
  rssMb: number;
  heapMb: number;
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const sample = (checks: number): MemSample => {
  const m = process.memoryUsage();
  return { checks, rssMb: mb(m.rss), heapMb: mb(m.heapUsed) };
};
const summary = (v: Verdict): Expected => ({ decision: v.decision, flagged: v.flagged.map((f) => f.messageIndex), score: v.score });
function mismatch(v: Verdict, want: Expected): string | null {
  if (v.reason !== 'model') return `reason ${v.reason}${v.error ? ` (${v.error.code}: ${v.error.message})` : ''}`;
  const got = summary(v);
  if (got.decision !== want.decision) return `decision ${got.decision}, expected ${want.decision}`;
  if (got.flagged.join() !== want.flagged.join()) return `flagged [${got.flagged.join()}], expected [${want.flagged.join()}]`;
  const same = got.score === want.score || (got.score !== null && want.score !== null && Math.abs(got.score - want.score) <= SCORE_TOLERANCE);
  return same ? null : `score ${got.score}, expected ${want.score}`;
}

const cases = Array.from({ length: K }, (_, i) => {
  const c = generateCase('test', 3, i);
  return { id: c.id, input: { messages: c.messages, action: { name: c.action.name, arguments: c.action.arguments }, tools: c.tools } };
});
const guard = createGuard({ worker: () => new Worker(BOOTSTRAP, { eval: true }), modelDir: MODEL_DIR, backend: 'node', timeoutMs: TIMEOUT_MS });
const failures: Array<{ phase: string; index: number; case: string; problem: string }> = [];
const memory: MemSample[] = [];
const t0 = performance.now();
try {
  const status = await guard.ready;
  console.error(`soak: ${K} cases, ${N_SEQ} sequential + ${N_CONC} concurrent checks, model ${status.model} (${status.variant}) on ${status.backend}`);
  const expected: Expected[] = [];
  for (const c of cases) {
    const v = await guard.check(c.input);
    if (v.reason !== 'model') failures.push({ phase: 'reference', index: expected.length, case: c.id, problem: `reason ${v.reason}` });
    expected.push(summary(v));
  }
  memory.push(sample(0));
  const tSeq = performance.now();
  for (let i = 0; i < N_SEQ; i++) {
    const k = i % K;
    const problem = mismatch(await guard.check(cases[k]!.input), expected[k]!);
    if (problem) failures.push({ phase: 'sequential', index: i, case: cases[k]!.id, problem });
    if ((i + 1) % SAMPLE_EVERY === 0) {
      memory.push(sample(i + 1));
      const last = memory.at(-1)!;
      console.error(`  ${i + 1}/${N_SEQ} checks, rss ${last.rssMb} MB, heap ${last.heapMb} MB, ${failures.length} failures`);
    }
  }
  const seqSeconds = (performance.now() - tSeq) / 1000;
  const tConc = performance.now();
  const answers = await Promise.allSettled(Array.from({ length: N_CONC }, (_, i) => guard.check(cases[i % K]!.input)));
  const concSeconds = (performance.now() - tConc) / 1000;
  answers.forEach((a, i) => {
    const k = i % K;
    const problem = a.status === 'rejected' ? `rejected: ${String(a.reason)}` : mismatch(a.value, expected[k]!);
    if (problem) failures.push({ phase: 'concurrent', index: i, case: cases[k]!.id, problem });
  });
  memory.push(sample(N_SEQ + N_CONC));

  const afterWarmup = memory.filter((m) => m.checks >= Math.min(WARMUP_CHECKS, N_SEQ));
  const base = afterWarmup[0] ?? memory[0]!;
  const rssGrowth = Math.max(...afterWarmup.map((m) => m.rssMb)) - base.rssMb;
  const heapGrowth = Math.max(...afterWarmup.map((m) => m.heapMb)) - base.heapMb;
  const memoryOk = rssGrowth <= RSS_GROWTH_BOUND_MB && heapGrowth <= HEAP_GROWTH_BOUND_MB;
  const report = {
    date,
    model: status.model,
    variant: status.variant,
    backend: status.backend,
    cases: K,
    sequential: { checks: N_SEQ, seconds: seqSeconds, checks_per_second: N_SEQ / seqSeconds },
    concurrent: { checks: N_CONC, seconds: concSeconds },
    answered: N_SEQ + N_CONC - failures.filter((f) => f.phase !== 'reference' && f.problem.startsWith('rejected')).length,
    failures,
    memory: {
      samples: memory,
      after_warmup_checks: base.checks,
      rss_growth_mb: rssGrowth,
      heap_growth_mb: heapGrowth,
      bounds_mb: { rss: RSS_GROWTH_BOUND_MB, heap: HEAP_GROWTH_BOUND_MB },
      ok: memoryOk,
    },
    total_seconds: (performance.now() - t0) / 1000,
    ok: failures.length === 0 && memoryOk,
  };
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(report, null, 1)}\n`);
  console.log(
    `soak ${report.ok ? 'passed' : 'FAILED'}: ${report.answered} of ${N_SEQ + N_CONC} answered, ${failures.length} mismatches; ` +
      `sequential ${report.sequential.checks_per_second.toFixed(2)} checks/s, ${N_CONC} concurrent in ${concSeconds.toFixed(1)} s; ` +
      `RSS +${rssGrowth.toFixed(1)} MB, heap +${heapGrowth.toFixed(1)} MB after ${base.checks} checks (bounds ${RSS_GROWTH_BOUND_MB} / ${HEAP_GROWTH_BOUND_MB} MB); ${outFile}`,
  );
  for (const f of failures.slice(0, 10)) console.log(`  ${f.phase} #${f.index} ${f.case}: ${f.problem}`);
  process.exitCode = report.ok ? 0 : 1;
} finally {
  await guard.dispose();
}
