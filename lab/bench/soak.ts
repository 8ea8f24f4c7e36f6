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
 * 4. Faults: F checks on a second guard with a realistic timeoutMs, each hit at a random point (seeded)
 *    by a worker kill (`worker.terminate()`), an abort of its signal, or nothing. Every answer must be
 *    its case's reference verdict, a failure-policy block (worker-crashed, timeout), or for an abort
 *    GuardAbortedError; never an allow by failure, another rejection or a hang, and the host lives on.
 *    Its memory is sampled every 25 checks from its own baseline (both guards loaded and warm), under the
 *    same bounds; the whole-run samples end after its guard is disposed.
 * Every check's answer time is recorded (worst per phase against its timeoutMs; the goal is within
 * timeoutMs + 250 ms) and the event loop's longest stall over the whole run (a 5 ms ticker's longest
 * gap, and monitorEventLoopDelay's max).
 *
 * --guard process runs it all on createNodeGuard's isolation: the core's conductor over onnxruntime-node in a
 * child process (the fault is then a SIGKILL of that process, and memory samples add the child's RSS).
 * --guard node runs it on the in-process guard (createNodeGuard, onnxruntime-node on the host's thread); its
 * faults are aborts only, since a native crash there is the host's (the reason isolation exists).
 * Last, one check on the largest input within the limits (seven 999,000-character tool results) reports its
 * own longest stall: the goal is under 100 ms for any input.
 *
 * Flags: --guard worker|process|node (default worker), --sequential N (default 5000), --concurrent C (default 200), --cases K (default 40),
 * --faults F (default 200), --fault-timeout-ms T (default 10000: above a wasm check on the embedded model), --seed S (default 22),
 * --out FILE (default lab/eval/results/soak-<date>.json). Exit status 1 when any check fails.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createGuard } from '../../src/page/create-guard.js';
import { createConductor, type LocalGuard } from '../../src/core/conductor.js';
import { loadProcessScorer } from '../../src/engine/process-scorer.js';
import type { Verdict } from '../../src/core/verdict.js';
import { generateCase } from '../../src/scenarios/index.js';
import { createNodeGuard } from '../../src/node.js';
import { largestInput } from './largest-input.js';
import { startStallMeter } from './stall.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL_DIR = `${ROOT}public/models/edgearmor-proxy`;
const WORKER_URL = new URL('../../src/worker.ts', import.meta.url);
// Node ignores `--import tsx` in a Worker's execArgv, so a tiny bootstrap registers tsx inside the thread.
const BOOTSTRAP = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
const SCORE_TOLERANCE = 1e-9;
const SAMPLE_EVERY = 250;
/** Worker restarts are few per fault check, so the fault phase is sampled more often to show a trend. */
const FAULT_SAMPLE_EVERY = 25;
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
    faults: { type: 'string', default: '200' },
    'fault-timeout-ms': { type: 'string', default: '10000' },
    seed: { type: 'string', default: '22' },
    guard: { type: 'string', default: 'worker' },
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
const N_FAULTS = positiveInt('faults', values.faults);
const FAULT_TIMEOUT_MS = positiveInt('fault-timeout-ms', values['fault-timeout-ms']);
const GUARD_KINDS = ['worker', 'process', 'node'] as const;
if (!(GUARD_KINDS as readonly string[]).includes(values.guard)) throw new RangeError(`--guard: received ${JSON.stringify(values.guard)}; allowed: ${GUARD_KINDS.join(', ')}`);
const GUARD_KIND = values.guard as (typeof GUARD_KINDS)[number];
let seed = positiveInt('seed', values.seed);
/** Seeded uniform [0, 1) (mulberry32), so a failing fault sequence can be replayed. */
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
// The goal of issue 22: every answer within timeoutMs + 250 ms.
const ANSWER_SLACK_MS = 250;
const date = new Date().toISOString().slice(0, 10);
const outFile = values.out ?? `${ROOT}lab/eval/results/soak-${date}.json`;

interface Expected {
  decision: Verdict['decision'];
  flagged: number[];
  score: number | null;
}
interface MemSample {
  checks: number;
  rssMb: number;
  heapMb: number;
  /** The scoring child process's RSS (--guard process). */
  childRssMb?: number;
}

/** The child processes' pids, newest last (--guard process): the fault phase kills the newest. */
const childPids: number[] = [];

/** A process's resident set from /proc, in MB; null when it is gone. */
function processRssMb(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Math.round((Number(kb) / 1024) * 10) / 10;
  } catch {
    return null;
  }
}

/** The guard under soak: the worker guard, the in-process guard, or the conductor over the child-process scorer. */
function makeGuard(timeoutMs: number, worker: () => Worker): Pick<LocalGuard, 'ready' | 'check' | 'dispose'> {
  if (GUARD_KIND === 'worker') return createGuard({ worker, modelDir: MODEL_DIR, backend: 'node', timeoutMs });
  if (GUARD_KIND === 'node') return createNodeGuard({ modelDir: MODEL_DIR, backend: 'node', timeoutMs });
  return createConductor(
    { timeoutMs },
    { load: () => loadProcessScorer({ location: { modelDir: MODEL_DIR }, runtime: {}, backends: ['node'], onScoreSent: (pid) => void (childPids.at(-1) !== pid && childPids.push(pid)) }) },
  );
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
const sample = (checks: number): MemSample => {
  const m = process.memoryUsage();
  const child = childPids.length ? processRssMb(childPids.at(-1)!) : null;
  return { checks, rssMb: mb(m.rss), heapMb: mb(m.heapUsed), ...(child !== null ? { childRssMb: child } : {}) };
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
const guard = makeGuard(TIMEOUT_MS, () => new Worker(BOOTSTRAP, { eval: true }));
const answerMs: Record<string, number[]> = { sequential: [], concurrent: [], faults: [] };
const timed = async <T>(phase: string, work: Promise<T>): Promise<T> => {
  const start = performance.now();
  try {
    return await work;
  } finally {
    answerMs[phase]!.push(performance.now() - start);
  }
};
// monitorEventLoopDelay samples on a timer and can miss one long block; the stall meter measures the gaps directly.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
const stallMeter = startStallMeter();
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
  // Each phase's own longest stall: one check at a time (what a check costs its host) apart from a burst of simultaneous calls.
  const phaseStall: Record<string, number> = {};
  let phaseMeter = startStallMeter();
  const endPhase = (phase: string) => {
    phaseStall[phase] = Math.round(phaseMeter.stop());
    phaseMeter = startStallMeter();
  };
  const tSeq = performance.now();
  for (let i = 0; i < N_SEQ; i++) {
    const k = i % K;
    const problem = mismatch(await timed('sequential', guard.check(cases[k]!.input)), expected[k]!);
    if (problem) failures.push({ phase: 'sequential', index: i, case: cases[k]!.id, problem });
    if ((i + 1) % SAMPLE_EVERY === 0) {
      memory.push(sample(i + 1));
      const last = memory.at(-1)!;
      console.error(`  ${i + 1}/${N_SEQ} checks, rss ${last.rssMb} MB, heap ${last.heapMb} MB, ${failures.length} failures`);
    }
  }
  const seqSeconds = (performance.now() - tSeq) / 1000;
  endPhase('sequential');
  const tConc = performance.now();
  const answers = await Promise.allSettled(Array.from({ length: N_CONC }, (_, i) => timed('concurrent', guard.check(cases[i % K]!.input))));
  const concSeconds = (performance.now() - tConc) / 1000;
  endPhase('concurrent');
  answers.forEach((a, i) => {
    const k = i % K;
    const problem = a.status === 'rejected' ? `rejected: ${String(a.reason)}` : mismatch(a.value, expected[k]!);
    if (problem) failures.push({ phase: 'concurrent', index: i, case: cases[k]!.id, problem });
  });
  memory.push(sample(N_SEQ + N_CONC));

  // Faults: a second guard with a realistic timeoutMs; its worker is killed, or a call aborted, at random points.
  let faultWorker: Worker | undefined;
  // dispose() does not wait for the thread to exit; the memory sample after the phase does.
  let faultWorkerExited = Promise.resolve();
  const startFaultWorker = () => {
    const worker = new Worker(BOOTSTRAP, { eval: true });
    faultWorkerExited = new Promise((done) => worker.once('exit', () => done()));
    return (faultWorker = worker);
  };
  const faultGuard = makeGuard(FAULT_TIMEOUT_MS, startFaultWorker);
  const faultCounts = { kill: 0, abort: 0, none: 0, answered_reference: 0, failure_policy: 0, aborted: 0 };
  // The fault phase runs a second guard (a second model in memory) beside the first, so its growth is
  // measured from its own baseline: both guards loaded and warm.
  const faultMemory: MemSample[] = [];
  const tFaults = performance.now();
  try {
    await faultGuard.ready;
    await faultGuard.check(cases[0]!.input);
    faultMemory.push(sample(0));
    for (let i = 0; i < N_FAULTS; i++) {
      const k = i % K;
      const drawn = random() < 0.4 ? 'kill' : random() < 0.5 ? 'abort' : 'none';
      const fault = drawn === 'kill' && GUARD_KIND === 'node' ? 'abort' : drawn;
      faultCounts[fault] += 1;
      const controller = new AbortController();
      const answer = timed('faults', faultGuard.check(cases[k]!.input, { signal: controller.signal })).then(
        (v) => ({ v }),
        (e: { code?: string; message?: string }) => ({ e }),
      );
      // A random point within a check's usual span (the reference phase's checks take tens to hundreds of ms).
      const delay = Math.floor(random() * 300);
      const hit = setTimeout(() => {
        if (fault === 'kill' && GUARD_KIND === 'worker') void faultWorker?.terminate();
        if (fault === 'kill' && GUARD_KIND === 'process') {
          try {
            process.kill(childPids.at(-1)!, 'SIGKILL');
          } catch {
            // Already gone (killed before, not yet replaced): the next check starts a new one.
          }
        }
        if (fault === 'abort') controller.abort();
      }, delay);
      const got = await answer;
      clearTimeout(hit);
      let problem: string | null = null;
      if ('e' in got) {
        if (fault === 'abort' && got.e.code === 'aborted') faultCounts.aborted += 1;
        else problem = `rejected: ${got.e.code ?? ''} ${got.e.message ?? String(got.e)}`;
      } else if (got.v.reason === 'failure-policy') {
        if (got.v.decision !== 'block') problem = `failure-policy ${got.v.decision} (${got.v.error?.code})`;
        else if (!['worker-crashed', 'timeout'].includes(got.v.error?.code ?? '')) problem = `failure-policy block for ${got.v.error?.code}: ${got.v.error?.message}`;
        else faultCounts.failure_policy += 1;
      } else {
        problem = mismatch(got.v, expected[k]!);
        if (!problem) faultCounts.answered_reference += 1;
      }
      if (problem) failures.push({ phase: `faults (${fault} at ${delay} ms)`, index: i, case: cases[k]!.id, problem });
      if ((i + 1) % FAULT_SAMPLE_EVERY === 0) faultMemory.push(sample(i + 1));
    }
  } finally {
    await faultGuard.dispose();
    await faultWorkerExited;
  }
  const faultSeconds = (performance.now() - tFaults) / 1000;
  endPhase('faults');
  phaseMeter.stop();
  memory.push(sample(N_SEQ + N_CONC + N_FAULTS));
  const longestGapMs = stallMeter.stop();
  // The largest input within the limits, alone, with its own stall meter.
  const largestCase = largestInput(); // made before the meter starts: generating 7 MB of text is the soak's work, not the guard's
  const largestMeter = startStallMeter();
  const largest = await guard.check(largestCase);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const largestStallMs = Math.round(largestMeter.stop());
  if (largest.reason !== 'model') failures.push({ phase: 'largest input', index: 0, case: 'largest', problem: `reason ${largest.reason}${largest.error ? ` (${largest.error.code})` : ''}` });
  loopDelay.disable();
  const worst = (xs: number[]) => (xs.length ? Math.round(Math.max(...xs)) : null);
  const worstFaultMs = worst(answerMs['faults']!);
  const answerTimes = {
    sequential: { worst_ms: worst(answerMs['sequential']!), timeout_ms: TIMEOUT_MS },
    concurrent: { worst_ms: worst(answerMs['concurrent']!), timeout_ms: TIMEOUT_MS },
    faults: { worst_ms: worstFaultMs, timeout_ms: FAULT_TIMEOUT_MS, goal_ms: FAULT_TIMEOUT_MS + ANSWER_SLACK_MS, within_goal: worstFaultMs !== null && worstFaultMs <= FAULT_TIMEOUT_MS + ANSWER_SLACK_MS },
  };
  const longestStallMs = Math.round(Math.max(longestGapMs, loopDelay.max / 1e6));

  const afterWarmup = memory.filter((m) => m.checks >= Math.min(WARMUP_CHECKS, N_SEQ));
  const base = afterWarmup[0] ?? memory[0]!;
  /** The largest growth of a series over its first sample (0 for an empty one). */
  const growthMb = (samples: readonly MemSample[], key: 'rssMb' | 'heapMb') => (samples.length ? Math.max(...samples.map((m) => m[key])) - samples[0]![key] : 0);
  const rssGrowth = growthMb(afterWarmup, 'rssMb');
  const heapGrowth = growthMb(afterWarmup, 'heapMb');
  const faultRssGrowth = growthMb(faultMemory, 'rssMb');
  const faultHeapGrowth = growthMb(faultMemory, 'heapMb');
  const memoryOk = Math.max(rssGrowth, faultRssGrowth) <= RSS_GROWTH_BOUND_MB && Math.max(heapGrowth, faultHeapGrowth) <= HEAP_GROWTH_BOUND_MB;
  const report = {
    date,
    model: status.model,
    variant: status.variant,
    backend: status.backend,
    guard: GUARD_KIND,
    cases: K,
    sequential: { checks: N_SEQ, seconds: seqSeconds, checks_per_second: N_SEQ / seqSeconds },
    concurrent: { checks: N_CONC, seconds: concSeconds },
    faults: { checks: N_FAULTS, seconds: faultSeconds, timeout_ms: FAULT_TIMEOUT_MS, seed: Number(values.seed), ...faultCounts },
    answer_times: answerTimes,
    longest_event_loop_stall_ms: longestStallMs,
    longest_event_loop_stall_ms_by_phase: phaseStall,
    largest_input: { results: 7, chars_each: 999_000, longest_event_loop_stall_ms: largestStallMs, timings: largest.timings },
    host_alive: true,
    answered: N_SEQ + N_CONC + N_FAULTS - failures.filter((f) => f.phase !== 'reference' && f.problem.startsWith('rejected')).length,
    failures,
    memory: {
      samples: memory,
      after_warmup_checks: base.checks,
      rss_growth_mb: rssGrowth,
      heap_growth_mb: heapGrowth,
      faults: { samples: faultMemory, rss_growth_mb: faultRssGrowth, heap_growth_mb: faultHeapGrowth },
      bounds_mb: { rss: RSS_GROWTH_BOUND_MB, heap: HEAP_GROWTH_BOUND_MB },
      ok: memoryOk,
    },
    total_seconds: (performance.now() - t0) / 1000,
    ok: failures.length === 0 && memoryOk && answerTimes.faults.within_goal,
  };
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, `${JSON.stringify(report, null, 1)}\n`);
  console.log(
    `soak ${report.ok ? 'passed' : 'FAILED'}: ${report.answered} of ${N_SEQ + N_CONC + N_FAULTS} answered, ${failures.length} mismatches; ` +
      `sequential ${report.sequential.checks_per_second.toFixed(2)} checks/s, ${N_CONC} concurrent in ${concSeconds.toFixed(1)} s; ` +
      `RSS +${rssGrowth.toFixed(1)} MB, heap +${heapGrowth.toFixed(1)} MB after ${base.checks} checks, in the fault phase RSS +${faultRssGrowth.toFixed(1)} MB, heap +${faultHeapGrowth.toFixed(1)} MB (bounds ${RSS_GROWTH_BOUND_MB} / ${HEAP_GROWTH_BOUND_MB} MB); ` +
      `${N_FAULTS} fault checks (${faultCounts.kill} kills, ${faultCounts.abort} aborts): worst answer ${worstFaultMs} ms against timeoutMs ${FAULT_TIMEOUT_MS}; ` +
      `longest event-loop stall ${longestStallMs} ms (sequential ${phaseStall['sequential']}, concurrent ${phaseStall['concurrent']}, faults ${phaseStall['faults']}), ${largestStallMs} ms on the largest input; host alive; ${outFile}`,
  );
  for (const f of failures.slice(0, 10)) console.log(`  ${f.phase} #${f.index} ${f.case}: ${f.problem}`);
  process.exitCode = report.ok ? 0 : 1;
} finally {
  await guard.dispose();
}
