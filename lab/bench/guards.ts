/**
 * The same checks through each way a Node host can run the guard, on the embedded model: the one number
 * for how much slower the worker guard is than the in-process one (the README said about 4x, the notes
 * about 8x). Each guard checks the same generated cases (generator test split); the first round warms up,
 * then `--reps` rounds are timed, and the median of the per-check times is reported with its ratio to
 * onnxruntime-node in process.
 *
 * Each guard also reports the host's longest event-loop stall (lab/bench/stall.ts): over its timed checks,
 * and for one check on the largest input the limits allow (seven tool results of 999,000 CJK characters),
 * the goal being under 100 ms; and the memory of the host and of the scoring process (the child process
 * of the isolated guards), which the host's RSS does not include. The guards run one after another, so
 * the host's RSS also carries what earlier guards left.
 *
 * `npx tsx lab/bench/guards.ts [--cases K] [--reps N]` (defaults 20 and 3); `npm run bench` runs it after the
 * scoring table. Writes lab/bench/results/<date>-guards.json.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createGuard } from '../../src/page/create-guard.js';
import type { Guard } from '../../src/core/guard-api.js';
import type { GuardInput } from '../../src/core/types.js';
import { createNodeGuard } from '../../src/node.js';
import { generateCase } from '../../src/scenarios/index.js';
import { largestInput } from './largest-input.js';
import { startStallMeter } from './stall.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL_DIR = `${ROOT}public/models/edgearmor-proxy`;
const WORKER_URL = new URL('../../src/worker.ts', import.meta.url);
// Node ignores `--import tsx` in a Worker's execArgv, so a tiny bootstrap registers tsx inside the thread (as lab/bench/soak.ts).
const BOOTSTRAP = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
const TIMEOUT_MS = 10 * 60_000;

/** The ways a Node host runs the guard, the reference first. */
const GUARDS: ReadonlyArray<{ name: string; make: () => Guard }> = [
  { name: 'in process, onnxruntime-node', make: () => createNodeGuard({ modelDir: MODEL_DIR, backend: 'node', timeoutMs: TIMEOUT_MS }) },
  { name: "child process, onnxruntime-node (isolation: 'process')", make: () => createNodeGuard({ modelDir: MODEL_DIR, isolation: 'process', timeoutMs: TIMEOUT_MS }) },
  { name: 'worker_threads worker (onnxruntime-node in its child process)', make: () => createGuard({ worker: () => new Worker(BOOTSTRAP, { eval: true }), modelDir: MODEL_DIR, timeoutMs: TIMEOUT_MS }) },
  { name: "worker_threads worker, backend: 'wasm'", make: () => createGuard({ worker: () => new Worker(BOOTSTRAP, { eval: true }), modelDir: MODEL_DIR, backend: 'wasm', timeoutMs: TIMEOUT_MS }) },
  { name: 'in process, wasm', make: () => createNodeGuard({ modelDir: MODEL_DIR, backend: 'wasm', timeoutMs: TIMEOUT_MS }) },
];

export interface GuardBenchRow {
  guard: string;
  backend: string | null;
  median_ms: number;
  ratio_vs_in_process_node: number;
  /** The longest event-loop stall over the timed checks. */
  stall_ms: number;
  /** The longest event-loop stall during one check on the largest input within the limits. */
  largest_input_stall_ms: number;
  /** This process's RSS after the timed checks, MB. */
  host_rss_mb: number;
  /** The largest RSS of this process's child processes (the scoring process, where there is one) over the timed checks, MB; 0 without one. */
  child_rss_mb: number;
}

/** The pids of this process's child processes (any thread's: a worker thread's child counts); Linux /proc, none elsewhere. */
function childPids(): string[] {
  try {
    return readdirSync('/proc/self/task').flatMap((tid) => readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
  } catch {
    return [];
  }
}

/** RSS of the child processes not in `before` (tsx's own esbuild service is one), MB. */
function childRssMb(before: ReadonlySet<string>): number {
  let kb = 0;
  for (const pid of childPids()) {
    if (before.has(pid)) continue;
    try {
      kb += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // Gone since it was listed.
    }
  }
  return Math.round(kb / 102.4) / 10;
}

/** Runs `fn` and returns the host's longest event-loop stall meanwhile (and a little after, for a block at its end). */
async function stallOf(fn: () => Promise<unknown>): Promise<number> {
  const meter = startStallMeter();
  await fn();
  await new Promise((resolve) => setTimeout(resolve, 20));
  return Math.round(meter.stop());
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Runs every guard over the same cases and returns one row each. */
/** The guard inputs of the first `count` generated test cases (seed 3): what every guard benchmark checks. */
export function generatedInputs(count: number): GuardInput[] {
  return Array.from({ length: count }, (_, i) => {
    const c = generateCase('test', 3, i);
    return { messages: c.messages, action: { name: c.action.name, arguments: c.action.arguments }, tools: c.tools };
  });
}

export async function benchGuards(caseCount: number, reps: number): Promise<GuardBenchRow[]> {
  const inputs = generatedInputs(caseCount);
  const rows: GuardBenchRow[] = [];
  for (const { name, make } of GUARDS) {
    const before = new Set(childPids());
    const guard = make();
    try {
      const status = await guard.ready;
      for (const input of inputs) await guard.check(input); // warm-up round
      const times: number[] = [];
      let childMb = 0;
      const stall = await stallOf(async () => {
        for (let r = 0; r < reps; r++) {
          for (const input of inputs) {
            const t0 = performance.now();
            const verdict = await guard.check(input);
            times.push(performance.now() - t0);
            childMb = Math.max(childMb, childRssMb(before));
            if (verdict.reason === 'failure-policy') throw new Error(`${name}: a check failed (${verdict.error?.code}: ${verdict.error?.message})`);
          }
        }
      });
      const largest = largestInput();
      const largestStall = await stallOf(async () => {
        const verdict = await guard.check(largest);
        if (verdict.reason === 'failure-policy') throw new Error(`${name}: the largest input failed (${verdict.error?.code}: ${verdict.error?.message})`);
      });
      const ms = median(times);
      rows.push({
        guard: name,
        backend: status.backend,
        median_ms: Math.round(ms * 10) / 10,
        ratio_vs_in_process_node: rows.length === 0 ? 1 : Math.round((ms / rows[0]!.median_ms) * 100) / 100,
        stall_ms: stall,
        largest_input_stall_ms: largestStall,
        host_rss_mb: Math.round(process.memoryUsage().rss / 104857.6) / 10,
        child_rss_mb: childMb,
      });
      process.stderr.write(`${name}: median ${ms.toFixed(1)} ms over ${times.length} checks; stall ${stall} ms, ${largestStall} ms on the largest input\n`);
    } finally {
      await guard.dispose();
    }
  }
  return rows;
}

/** The rows as a table. */
export function guardsTable(rows: readonly GuardBenchRow[]): string {
  return [
    '| guard | backend | median ms / check | vs in process (node) | longest stall, ms | longest stall, largest input, ms | host RSS, MB | scoring process RSS, MB |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.guard} | ${r.backend} | ${r.median_ms} | ${r.ratio_vs_in_process_node}x | ${r.stall_ms} | ${r.largest_input_stall_ms} | ${r.host_rss_mb} | ${r.child_rss_mb || '-'} |`),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { cases: { type: 'string', default: '20' }, reps: { type: 'string', default: '3' } } });
  const rows = await benchGuards(Number(values.cases), Number(values.reps));
  const date = new Date().toISOString().slice(0, 10);
  mkdirSync(`${ROOT}lab/bench/results`, { recursive: true });
  writeFileSync(`${ROOT}lab/bench/results/${date}-guards.json`, `${JSON.stringify({ date, model: 'embedded q4', cases: Number(values.cases), reps: Number(values.reps), rows }, null, 2)}\n`);
  process.stdout.write(`${guardsTable(rows)}\n`);
}
