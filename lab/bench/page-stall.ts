/**
 * The caller's thread while a worker guard checks the largest input: the longest the host's event loop went
 * without running (stall.ts), on the embedded model with wasm in a Node worker thread, as a page's Worker
 * runs it, twice (cold, then warm). Usage: `tsx lab/bench/page-stall.ts [dist directory]` (the built library to measure; default ./dist).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { largestInput } from './largest-input.js';
import { startStallMeter } from './stall.js';

const dist = resolve(process.argv[2] ?? 'dist');
const { createGuard } = (await import(pathToFileURL(resolve(dist, 'index.js')).href)) as typeof import('../../src/index.js');
const { embeddedModelDir } = (await import(pathToFileURL(resolve(dist, 'node.js')).href)) as typeof import('../../src/node.js');
const workerUrl = pathToFileURL(resolve(dist, 'worker.js'));

// One wasm thread in the worker: on a 2-core machine a worker on both cores keeps the OS from scheduling the
// caller's thread, and the meter then measures the scheduler, not the caller's own tasks.
const wasmThreads = Number(process.env['EDGEARMOR_BENCH_WASM_THREADS'] ?? 1);
const guard = createGuard({ worker: () => new Worker(workerUrl), modelDir: embeddedModelDir(), backend: 'wasm', wasmThreads, timeoutMs: 600_000 });
const status = await guard.ready;
const input = largestInput();
await guard.check({ messages: input.messages.slice(0, 3).map((m) => ({ ...m, content: typeof m['content'] === 'string' ? (m['content'] as string).slice(0, 200) : m['content'] })), action: input.action });
/** One check of the largest input under the stall meter, with where each stall over 40 ms began and how long it was. */
async function measured(run: number): Promise<void> {
  const meter = startStallMeter();
  const t0 = performance.now();
  const stalls: Array<[number, number]> = [];
  let last = t0;
  const ticker = setInterval(() => {
    const t = performance.now();
    if (t - last > 40) stalls.push([Math.round(last - t0), Math.round(t - last)]);
    last = t;
  }, 5);
  const verdict = await guard.check(input);
  const ms = performance.now() - t0;
  clearInterval(ticker);
  const stall = meter.stop();
  process.stdout.write(`${JSON.stringify({ dist, run, wasmThreads, backend: status.backend, reason: verdict.reason, checkMs: Math.round(ms), longestStallMs: Math.round(stall * 10) / 10, stalls })}\n`);
}

// The first run pays for compiling the page's code paths on a text this long; the second is the steady state.
await measured(1);
await measured(2);
await guard.dispose();
