/**
 * Logits for every position vs the scored ones only (the logits adapter), on a decoder with Qwen2.5's vocabulary
 * (lab/bench/big-vocab.ts: 2 layers, hidden 32, 151,936 ids, hub layout without num_logits_to_keep): one ~5k-token
 * check (the full context and three leave-one-out variants, 12 action tokens) through the prefix path, the
 * engine's plan on a CPU, on onnxruntime-node. Each way runs in a child process of its own: its latency (the first
 * run on a fresh session, and with --timed one more run after it), logits rows returned, forward passes and peak
 * RSS above the level before the first run (lab/bench/memory.ts). About a minute here, most of it the full-logits
 * way (two with --timed).
 *
 * `npx tsx lab/bench/logits.ts [--tokens N] [--timed] [--way full-logits|kept-logits]` (default 5000, both ways). Prints one line per way and a JSON summary last.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { keepLogits } from '../../src/engine/logits-adapter.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { createOrtSession } from '../../src/engine/ort-session.js';
import { scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import type { ScoreSequence } from '../../src/engine/scorer.js';
import { bigVocabFixture } from './big-vocab.js';
import { peakRssDelta } from './memory.js';

const SELF = fileURLToPath(import.meta.url);
const WAYS = ['full-logits', 'kept-logits'] as const;
type Way = (typeof WAYS)[number];
/** A child that takes longer is stopped: the guard's default timeout is 30 s, so this is 4x past any answer. */
const CHILD_LIMIT_MS = 120_000;

interface WayResult {
  way: Way;
  firstMs: number;
  /** A second run on the same session, with --timed. */
  timedMs: number | null;
  logitRows: number;
  forwardPasses: number;
  computedTokens: number;
  peakRssMiB: number;
  /** The child's whole RSS at its peak: the level before the run plus peakRssMiB. */
  peakProcessRssMiB: number;
}

/** The check's variants: full, and without the user request and two 500-token results. */
function check(tokens: number, vocab: number): ScoreSequence[] {
  let s = 11;
  const next = () => ((s = (s * 1664525 + 1013904223) >>> 0), 16 + (s % (vocab - 16)));
  const context = [0, ...Array.from({ length: tokens - 13 }, next)];
  const action = Array.from({ length: 12 }, next);
  const without = (from: number, to: number) => [...context.slice(0, from), ...context.slice(to)];
  return [context, without(100, 150), without(1000, 1500), without(3000, 3500)].map((c) => ({ context: c, action }));
}

async function runWay(way: Way, tokens: number, timed: boolean): Promise<WayResult> {
  const files = await loadModelFiles(directoryReader(bigVocabFixture()), 'fp32');
  const dims = dimsFromConfig(files.config, 2);
  const adapted = way === 'kept-logits' ? keepLogits(files.onnx) : undefined;
  if (adapted && !adapted.ok) throw new Error(adapted.reason);
  const session = await createOrtSession(adapted ? adapted.model : files.onnx, { backend: 'node', externalData: files.externalData });
  dims.fullLogits = way === 'full-logits';
  const seqs = check(tokens, dims.vocabSize);
  let stats = { logitRows: 0, forwardPasses: 0, computedTokens: 0 };
  let firstMs = 0;
  const before = process.memoryUsage.rss() / 2 ** 20;
  const peakRssMiB = await peakRssDelta(async () => {
    const t0 = performance.now();
    stats = (await scoreSequencesShared(session, dims, seqs)).stats;
    firstMs = performance.now() - t0;
  });
  let timedMs: number | null = null;
  if (timed) {
    const t1 = performance.now();
    await scoreSequencesShared(session, dims, seqs);
    timedMs = performance.now() - t1;
  }
  await session.release();
  return { way, firstMs, timedMs, logitRows: stats.logitRows, forwardPasses: stats.forwardPasses, computedTokens: stats.computedTokens, peakRssMiB, peakProcessRssMiB: before + peakRssMiB };
}

function child(way: Way, tokens: number, timed: boolean): Promise<WayResult | { way: Way; error: string }> {
  return new Promise((done) => {
    const proc = spawn(process.execPath, [...process.execArgv, SELF, '--child', way, '--tokens', String(tokens), ...(timed ? ['--timed'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const timer = setTimeout(() => proc.kill('SIGKILL'), CHILD_LIMIT_MS);
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) done(JSON.parse(out.trim().split('\n').at(-1)!) as WayResult);
      else done({ way, error: signal === 'SIGKILL' ? `stopped after ${CHILD_LIMIT_MS} ms` : `exited with ${String(code)}` });
    });
  });
}

const { values } = parseArgs({ options: { tokens: { type: 'string', default: '5000' }, child: { type: 'string' }, timed: { type: 'boolean', default: false }, way: { type: 'string' } } });
const tokens = Number(values.tokens);
if (!Number.isInteger(tokens) || tokens < 4000) throw new Error(`--tokens: received ${String(values.tokens)}; allowed: an integer >= 4000 (the check removes tokens 3000-3500).`);
if (values.child !== undefined) {
  if (!WAYS.includes(values.child as Way)) throw new Error(`--child: received ${values.child}; allowed: ${WAYS.join(', ')}`);
  process.stdout.write(`${JSON.stringify(await runWay(values.child as Way, tokens, values.timed))}\n`);
} else {
  bigVocabFixture();
  const results = [];
  if (values.way !== undefined && !WAYS.includes(values.way as Way)) throw new Error(`--way: received ${values.way}; allowed: ${WAYS.join(', ')}`);
  for (const way of values.way === undefined ? WAYS : [values.way as Way]) {
    const r = await child(way, tokens, values.timed);
    results.push(r);
    if ('error' in r) process.stdout.write(`${way}: ${r.error}\n`);
    else {
      process.stdout.write(
        `${way}: first ${r.firstMs.toFixed(0)} ms${r.timedMs === null ? '' : `, timed ${r.timedMs.toFixed(0)} ms`}, logits rows ${r.logitRows}, passes ${r.forwardPasses}, computed tokens ${r.computedTokens}, peak RSS +${r.peakRssMiB.toFixed(0)} MiB (${r.peakProcessRssMiB.toFixed(0)} MiB in all)\n`,
      );
    }
  }
  process.stdout.write(`${JSON.stringify({ tokens, vocab: 151_936, results })}\n`);
}
