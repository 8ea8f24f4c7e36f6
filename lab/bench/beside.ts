/**
 * The guard beside other work: the same checks by the in-process guard (onnxruntime-node, embedded model)
 * alone, then in two processes at once, each doing all of them. On a machine of two cores the second
 * process takes one core's worth, so two at once can at best take twice as long; what onnxruntime's CPU
 * threads burn spinning between ops comes on top (docs/speed.md, "Beside other work").
 *
 * `npx tsx lab/bench/beside.ts [--cases K]` (default 30). Prints the wall time of each run.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createNodeGuard } from '../../src/node.js';
import { generatedInputs } from './guards.js';

const SELF = fileURLToPath(import.meta.url);

/** Checks `count` generated cases after one warm-up check; returns the timed checks' wall milliseconds. */
async function timedChecks(count: number): Promise<number> {
  const guard = createNodeGuard({ backend: 'node' });
  try {
    const inputs = generatedInputs(count);
    await guard.check(inputs[0]!);
    const start = performance.now();
    for (const input of inputs) await guard.check(input);
    return performance.now() - start;
  } finally {
    await guard.dispose();
  }
}

/** Runs this script's `--child` mode in a new process and resolves with the milliseconds it printed. */
function childRun(count: number): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...process.execArgv, SELF, '--child', '--cases', String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', fail);
    child.on('exit', (code) => (code === 0 ? done(Number(out.trim().split('\n').at(-1))) : fail(new Error(`child exited with ${String(code)}`))));
  });
}

const { values } = parseArgs({ options: { cases: { type: 'string', default: '30' }, child: { type: 'boolean', default: false } } });
const count = Number(values.cases);
if (!Number.isInteger(count) || count < 1) throw new Error(`--cases: received ${String(values.cases)}; allowed: a positive integer.`);
if (values.child) {
  process.stdout.write(`${String(Math.round(await timedChecks(count)))}\n`);
} else {
  const alone = await childRun(count);
  const pair = await Promise.all([childRun(count), childRun(count)]);
  process.stdout.write(`${String(count)} checks, in-process guard (onnxruntime-node), embedded model\n`);
  process.stdout.write(`alone: ${String(alone)} ms\n`);
  process.stdout.write(`two processes at once: ${pair.map(String).join(' ms, ')} ms (${(Math.max(...pair) / alone).toFixed(2)}x alone)\n`);
}
