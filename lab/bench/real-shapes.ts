/**
 * One check at the size of the models users bring: random-weight decoders at the published shapes of SmolLM2-135M,
 * Qwen2.5-0.5B and Qwen3-0.6B (lab/model/make_shape_model.py: fp32, onnx-community layout with external data, no
 * num_logits_to_keep), on onnxruntime-node, three ways:
 *   - prefix: the engine's plan on a CPU (`scoreSequencesShared`, shared prefixes) on the graph the logits adapter
 *     rewrote at load, so the LM head runs on the scored rows only;
 *   - naive: every variant a separate full forward, batch 1, on the same rewritten graph (the reference's approach);
 *   - full-logits: the same plan on the downloaded graph as it is (what the engine does when the adapter cannot
 *     rewrite an LM head): logits for every position it computes, over the whole vocabulary.
 * Each way runs in a child process of its own, once, from a fresh session: latency, tokens computed, logits rows,
 * forward passes and peak RSS above the level before the run (lab/bench/memory.ts, the kernel's high-water mark).
 * The three ways' action log-probs are compared (max |diff|). Timing only: the weights are random.
 *
 * `npx tsx lab/bench/real-shapes.ts [--shapes smollm2-135m,qwen2.5-0.5b,qwen3-0.6b] [--cases 2048x3,4096x4]
 *   [--ways prefix,naive,full-logits]`. The models (0.5-2.4 GB each) are built once into the system's temporary
 * directory, keyed by the builder's hash (about a minute each). Writes lab/bench/results/<date>-real-shapes.json
 * (merging shapes and cases it did not re-measure) and prints a markdown table. Tens of minutes for everything on
 * two cores, most of it the naive and full-logits ways at 4k tokens.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { keepLogits } from '../../src/engine/logits-adapter.js';
import { dimsFromConfig } from '../../src/engine/model-config.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { createOrtSession, type OrtSession } from '../../src/engine/ort-session.js';
import { scoreSequencesShared } from '../../src/engine/prefix-scorer.js';
import { scoreSequences, type ModelDims, type ScoreSequence } from '../../src/engine/scorer.js';
import { createProxyTokenizer } from '../../src/engine/tokenizer.js';
import { buildCase, r3, type CaseSpec } from './cases.js';
import { machine } from './machine.js';
import { peakRssDelta } from './memory.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILDER = fileURLToPath(new URL('../model/make_shape_model.py', import.meta.url));
const SHAPES = ['smollm2-135m', 'qwen2.5-0.5b', 'qwen3-0.6b'] as const;
type Shape = (typeof SHAPES)[number];
const WAYS = ['prefix', 'naive', 'full-logits'] as const;
type Way = (typeof WAYS)[number];
/** The standard check (2k tokens, 3 untrusted spans) and a 4k-token MCP-sized one (four untrusted parts). */
const DEFAULT_CASES = '2048x3,4096x4';

interface WayResult {
  way: Way;
  contextTokens: number;
  /** Wall-clock time of the run. */
  ms: number;
  /** CPU time of the child's threads during the run: what the check costs whatever else shares the machine. */
  cpuMs: number;
  /** The process's RSS at its peak during the run: the weights, the session's arena and the run's own memory. */
  peakProcessMiB?: number;
  computedTokens: number;
  logitRows: number;
  forwardPasses: number;
  peakRssMiB: number;
  logProbs: number[][];
}

/** The shape's model directory, built first if this machine has none for the builder's current version. */
function shapeModel(shape: Shape): string {
  const hash = createHash('sha256').update(readFileSync(BUILDER)).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `edgearmor-shape-${shape}-${hash}`);
  if (!existsSync(join(dir, 'manifest.json'))) {
    process.stderr.write(`building ${shape} (random weights) into ${dir}\n`);
    execFileSync('/usr/bin/python3', [BUILDER, shape, dir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp' },
    });
  }
  return dir;
}

/** The model through the engine's own loader (manifest hashes, external data by path), rewritten by the logits adapter unless `way` is full-logits. */
async function openWay(dir: string, way: Way): Promise<{ session: OrtSession; dims: ModelDims }> {
  const files = await loadModelFiles(directoryReader(`${dir}/`), 'fp32');
  const dims = dimsFromConfig(files.config, 0);
  let model = files.onnx;
  if (way === 'full-logits') dims.fullLogits = true;
  else {
    const adapted = keepLogits(files.onnx);
    if (!adapted.ok) throw new Error(`the logits adapter refused the ${dir} graph: ${adapted.reason}`);
    model = adapted.model;
  }
  const session = await createOrtSession(model, { backend: 'node', externalData: files.externalData });
  return { session, dims };
}

/** `--child DIR WAY TOKENSxSPANS`: one way's first run on one case in this fresh process; prints its result as JSON. */
async function child(dir: string, way: Way, specArg: string): Promise<void> {
  const [tokens, spans] = specArg.split('x').map(Number) as [number, number];
  const tok = createProxyTokenizer({
    tokenizerJson: JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
    tokenizerConfig: JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')),
  });
  const { sequences, contextTokens } = buildCase(tok, { tokens, spans });
  const { session, dims } = await openWay(dir, way);
  const fullTokens = sequences.reduce((n, s) => n + s.context.length + s.action.length, 0);
  const actionRows = sequences.reduce((n, s) => n + s.action.length, 0);
  let out!: Omit<WayResult, 'way' | 'ms' | 'cpuMs' | 'peakRssMiB' | 'peakProcessMiB' | 'contextTokens'>;
  let ms = 0;
  let cpuMs = 0;
  const rssBeforeMiB = process.memoryUsage.rss() / 2 ** 20;
  const peakRssMiB = await peakRssDelta(async () => {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    out = await runWay(way, session, dims, sequences, fullTokens, actionRows);
    const cpu = process.cpuUsage(cpu0);
    ms = performance.now() - t0;
    cpuMs = (cpu.user + cpu.system) / 1000;
  });
  await session.release();
  process.stdout.write(`${JSON.stringify({ way, ms: Math.round(ms), cpuMs: Math.round(cpuMs), peakRssMiB: r3(peakRssMiB), peakProcessMiB: Math.round(rssBeforeMiB + peakRssMiB), contextTokens, ...out })}\n`);
}

async function runWay(way: Way, session: OrtSession, dims: ModelDims, sequences: ScoreSequence[], fullTokens: number, actionRows: number): Promise<Omit<WayResult, 'way' | 'ms' | 'cpuMs' | 'peakRssMiB' | 'peakProcessMiB' | 'contextTokens'>> {
  switch (way) {
    case 'prefix':
    case 'full-logits': {
      const { results, stats } = await scoreSequencesShared(session, dims, sequences);
      return { computedTokens: stats.computedTokens, logitRows: stats.logitRows, forwardPasses: stats.forwardPasses, logProbs: results.map((r) => [...r.tokenLogProbs]) };
    }
    case 'naive': {
      const results = await scoreSequences(session, dims, sequences, { maxBatchTokens: 1 });
      return { computedTokens: fullTokens, logitRows: actionRows, forwardPasses: sequences.length, logProbs: results.map((r) => [...r.tokenLogProbs]) };
    }
  }
}

function runChild(dir: string, way: Way, spec: CaseSpec): WayResult {
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=16384', '--import', 'tsx', SELF, '--child', dir, way, `${spec.tokens}x${spec.spans}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 2 ** 20,
  });
  if (r.status !== 0) throw new Error(`${way} on ${dir} (${spec.tokens}x${spec.spans}) failed with status ${r.status}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as WayResult;
}

interface Row {
  shape: Shape;
  params: string;
  vocab: number;
  context_tokens: number;
  spans: number;
  variants: number;
  ways: Partial<Record<Way, Omit<WayResult, 'logProbs' | 'way'>>>;
  /** Largest |log-prob difference| between the ways, over every action token of every variant. */
  max_abs_logprob_diff: number;
}

function parameters(dir: string): string {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const hd = c['head_dim']!;
  const layer = c['hidden_size']! * hd * (c['num_attention_heads']! * 2 + c['num_key_value_heads']! * 2) + 3 * c['hidden_size']! * c['intermediate_size']!;
  return `${(c['num_hidden_layers']! * layer / 1e6).toFixed(0)}M + ${(c['vocab_size']! * c['hidden_size']! / 1e6).toFixed(0)}M embedding`;
}

export function table(rows: readonly Row[]): string {
  const cell = (r: Row, w: Way, f: (x: Omit<WayResult, 'logProbs' | 'way'>) => string) => (r.ways[w] ? f(r.ways[w]!) : '-');
  const lines = rows.map((r) => {
    const p = r.ways.prefix;
    const ratio = (w: Way) => (p && r.ways[w] ? `${(r.ways[w]!.cpuMs / p.cpuMs).toFixed(1)}x` : '-');
    return `| ${r.shape} | ${r.params} | ${r.context_tokens} / ${r.spans} / ${r.variants} | ${WAYS.map((w) => cell(r, w, (x) => (x.cpuMs / 1000).toFixed(1))).join(' / ')} | ${WAYS.map((w) => cell(r, w, (x) => (x.ms / 1000).toFixed(1))).join(' / ')} | ${ratio('naive')} / ${ratio('full-logits')} | ${WAYS.map((w) => cell(r, w, (x) => String(x.computedTokens))).join(' / ')} | ${WAYS.map((w) => cell(r, w, (x) => String(x.logitRows))).join(' / ')} | ${WAYS.map((w) => cell(r, w, (x) => x.peakRssMiB.toFixed(0))).join(' / ')} | ${r.max_abs_logprob_diff.toExponential(1)} |`;
  });
  return [
    '| shape | parameters | tokens / spans / variants | CPU s: prefix / naive / full logits | wall s | naive, full logits vs prefix (CPU) | tokens computed | logits rows | peak RSS above start, MiB | max abs log-prob diff |',
    '|' + '---|'.repeat(10),
    ...lines,
  ].join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') return child(argv[1]!, argv[2] as Way, argv[3]!);
  const { values } = parseArgs({ args: argv, options: { shapes: { type: 'string', default: SHAPES.join(',') }, cases: { type: 'string', default: DEFAULT_CASES }, ways: { type: 'string', default: WAYS.join(',') } } });
  const shapes = values.shapes.split(',') as Shape[];
  const ways = values.ways.split(',') as Way[];
  const bad = [...shapes.filter((s) => !SHAPES.includes(s)), ...ways.filter((w) => !WAYS.includes(w))];
  if (bad.length > 0) throw new Error(`unknown ${bad.join(', ')}: --shapes takes ${SHAPES.join(', ')}; --ways takes ${WAYS.join(', ')}`);
  const specs = values.cases.split(',').map((c) => c.split('x').map(Number) as [number, number]).map(([tokens, spans]) => ({ tokens, spans }));
  const date = new Date().toISOString().slice(0, 10);
  const file = `${ROOT}lab/bench/results/${date}-real-shapes.json`;
  mkdirSync(`${ROOT}lab/bench/results`, { recursive: true });
  let merged: Row[] = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { rows: Row[] }).rows : [];
  for (const shape of shapes) {
    const dir = shapeModel(shape);
    const vocab = (JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    for (const spec of specs) {
      const results = ways.map((way) => {
        const r = runChild(dir, way, spec);
        process.stderr.write(`${shape} ${spec.tokens}x${spec.spans} ${way}: ${r.ms} ms (CPU ${r.cpuMs} ms), ${r.computedTokens} tokens, ${r.logitRows} logits rows, peak +${r.peakRssMiB} MiB\n`);
        return r;
      });
      let diff = 0;
      for (const r of results) r.logProbs.forEach((seq, i) => seq.forEach((v, k) => (diff = Math.max(diff, Math.abs(v - results[0]!.logProbs[i]![k]!)))));
      const row: Row = {
        shape,
        params: parameters(dir),
        vocab,
        context_tokens: results[0]!.contextTokens,
        spans: spec.spans,
        variants: results[0]!.logProbs.length,
        ways: Object.fromEntries(results.map(({ logProbs: _, way, ...rest }) => [way, rest])),
        max_abs_logprob_diff: diff,
      };
      // Written after every case, so a long run stopped part-way keeps what it measured; a re-measured case replaces its row.
      merged = [...merged.filter((o) => !(o.shape === row.shape && o.spans === row.spans && o.context_tokens === row.context_tokens)), row];
      writeFileSync(file, `${JSON.stringify({ date, machine: machine(), backend: 'onnxruntime-node (CPU), fp32', rows: merged }, null, 2)}\n`);
    }
  }
  process.stdout.write(`${table(merged)}\n\nMachine: ${machine()}\n`);
}

await main();
