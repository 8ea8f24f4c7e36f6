/**
 * The GPU training pipeline, proven end to end at a tiny size on the CPU with the same scripts:
 * lab/model/gpu-data.sh builds the data (generator, model/corpus.py's broad cases, AgentDojo choice sets,
 * dev and ASB samples), lab/model/gpu-broad.sh trains a run that holds a whole AgentDojo suite out,
 * scores every held-out set and writes the held-out table, and export + quantization turn it into the
 * files the engine loads. Needs Debian's python3-torch, python3-onnx, python3-numpy and python3-regex
 * (.ci/run installs them); without them the test fails under CI and is skipped elsewhere.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PY = '/usr/bin/python3';
const hasTorch = requirement(
  spawnSync(PY, ['-c', 'import torch, onnx, numpy, regex'], { stdio: 'ignore' }).status === 0,
  `${PY} with torch, onnx, numpy and regex (.ci/run installs python3-torch, python3-onnx, python3-numpy and python3-regex)`,
);

const work = mkdtempSync(join(tmpdir(), 'edgearmor-pipeline-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const env = {
  ...process.env,
  PY,
  PYTHONUNBUFFERED: '1',
  LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp',
  DATA: join(work, 'data'),
  RUNS: join(work, 'runs'),
  // Data: a few cases of every set, a few AgentDojo runs.
  N_GEN: '60',
  N_BROAD: '60',
  N_EVAL: '12',
  N_TRACES: '120',
  N_ASB_PAIRS: '8',
  SOURCE_LIMIT: '400',
  // Training and scoring: three steps of a tiny model, two cases a set.
  DEVICE: 'cpu',
  STEPS: '3',
  EVAL_EVERY: '0',
  MAX_LEN: '512',
  BATCH_TOKENS: '2048',
  WORKERS: '1',
  SCORE_LIMIT: '2',
};

function bash(script: string, ...args: string[]): string {
  return execFileSync('bash', [script, ...args], { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe.skipIf(!hasTorch)('GPU training pipeline at a tiny size on the CPU', () => {
  it('builds the data, trains a suite-held-out run, scores the held-out sets and exports a q4 model', () => {
    bash('lab/model/gpu-data.sh');
    for (const set of ['train', 'broad-train', 'broad-validation', 'broad-test', 'adv-val', 'adv-slack', 'adv-banking', 'dev', 'asb', 'traces']) {
      expect(existsSync(join(env.DATA, `${set}.jsonl.xz`)), set).toBe(true);
    }

    const out = bash('lab/model/gpu-broad.sh', 'tiny-noslack --hidden 32 --layers 1 --heads 2 --ffn 64 --trace-exclude-suite slack');
    const run = join(env.RUNS, 'gpu-tiny-noslack');
    const log = JSON.parse(readFileSync(join(run, 'train-log.json'), 'utf8')) as { steps_done: number; args: { trace_exclude_suite: string; max_len: number } };
    expect(log.steps_done).toBe(3);
    expect(log.args.trace_exclude_suite).toBe('slack');
    expect(log.args.max_len).toBe(512);
    expect(existsSync(join(run, 'model-fp16.pt'))).toBe(true);

    // Every held-out set is scored, the suite the run never saw among them; the table reads them.
    for (const set of ['broad-validation', 'broad-test', 'adv-val', 'adv-slack', 'asb', 'dev', 'validation', 'test']) {
      const lines = readFileSync(join(run, `${set}-scores.jsonl`), 'utf8').trim().split('\n');
      expect(lines, set).toHaveLength(2);
      const rec = JSON.parse(lines[0] ?? '{}') as { user?: { d?: number } };
      expect(Number.isFinite(rec.user?.d), set).toBe(true);
    }
    expect(existsSync(join(run, 'adv-banking-scores.jsonl'))).toBe(false);
    const table = JSON.parse(readFileSync(join(env.RUNS, 'heldout.json'), 'utf8')) as Record<string, Record<string, unknown>>;
    expect(Object.keys(table['gpu-tiny-noslack'] ?? {})).toEqual(expect.arrayContaining(['adv-val', 'adv-slack']));
    expect(out).toMatch(/== gpu-tiny-noslack/);
    // Beside the rates, each slice carries its labels' median dU (null for a label its cases lack).
    const advVal = readFileSync(join(run, 'adv-val-scores.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { label: string; user: { d: number } });
    for (const label of ['injected', 'benign']) {
      const ds = advVal.filter((r) => r.label === label).map((r) => r.user.d).sort((a, b) => a - b);
      expect(table['gpu-tiny-noslack']?.['adv-val'], label).toHaveProperty(`median_du_${label}`, ds.length > 0 ? ds[ds.length >> 1] : null);
    }

    // A second call with the run brought back trains nothing again and keeps its scores, but not a score file
    // made from other cases or limits (a tiny rehearsal's left in a run directory); with the device's OUT set, it
    // packs the scores and the fp16 weights within the device's file limits.
    const scoreTime = (set: string) => statSync(join(run, `${set}-scores.jsonl`)).mtimeMs;
    const [advValTime, asbTime] = [scoreTime('adv-val'), scoreTime('asb')];
    const asbSource = join(run, 'asb-scores.jsonl.source.json');
    const source = JSON.parse(readFileSync(asbSource, 'utf8')) as { limit: number };
    expect(source.limit).toBe(2);
    writeFileSync(asbSource, JSON.stringify({ ...source, limit: 99 }));
    const out2 = join(work, 'out');
    const again = execFileSync('bash', ['lab/model/gpu-broad.sh', 'tiny-noslack --hidden 32 --layers 1 --heads 2 --ffn 64 --trace-exclude-suite slack'], {
      cwd: ROOT, env: { ...env, OUT: out2 }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(again).toMatch(/tiny-noslack: trained already/);
    expect(scoreTime('adv-val')).toBe(advValTime);
    expect(scoreTime('asb')).toBeGreaterThan(asbTime);
    expect(JSON.parse(readFileSync(asbSource, 'utf8'))).toEqual(source);
    expect(again).toMatch(/packed tiny-noslack: .* in 1 part\(s\)/);
    const packed = readdirSync(out2).sort();
    expect(packed).toEqual(['meta.tar.xz', 'tiny-noslack.fp16.pt.part-00']);
    expect(readFileSync(join(out2, 'tiny-noslack.fp16.pt.part-00'))).toEqual(readFileSync(join(run, 'model-fp16.pt')));

    const exported = join(work, 'export');
    execFileSync(PY, ['model/export_onnx.py', '--run', run, '--out', exported], { cwd: ROOT, env, stdio: 'ignore' });
    execFileSync(PY, ['model/quantize.py', exported], { cwd: ROOT, env, stdio: 'ignore' });
    const config = JSON.parse(readFileSync(join(exported, 'config.json'), 'utf8')) as { max_position_embeddings: number; hidden_size: number };
    expect(config.max_position_embeddings).toBe(512);
    expect(config.hidden_size).toBe(32);
    expect(existsSync(join(exported, 'onnx', 'model_q4.onnx'))).toBe(true);
  }, 240_000);
});

describe.runIf(hasTorch)('the held-out-suite base models kept in git', () => {
  it('build into model directories that the guard loads and checks with (lab/model/suite-bases.sh)', async () => {
    const out = join(work, 'bases');
    const printed = execFileSync('bash', ['lab/model/suite-bases.sh', out], { cwd: ROOT, env, encoding: 'utf8' });
    expect(printed.trim().split('\n')).toEqual([join(out, 'base-noslack'), join(out, 'base-nobanking')]);
    for (const suite of ['slack', 'banking']) {
      const dir = join(out, `base-no${suite}`);
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { model: string; files: Record<string, unknown> };
      expect(manifest.model).toBe(`edgearmor-proxy-no${suite}`);
      expect(Object.keys(manifest.files)).toEqual(expect.arrayContaining(['onnx/model.onnx', 'onnx/model_q4.onnx', 'config.json']));
      // The suite it never saw is the one its training log names as left out.
      const log = JSON.parse(readFileSync(join(dir, 'train-log.json'), 'utf8')) as { args: { trace_exclude_suite: string } };
      expect(log.args.trace_exclude_suite).toBe(suite);
    }
    const { createNodeGuard } = await import('../../src/node.js');
    const { findCase } = await import('../../src/scenarios/index.js');
    const c = findCase('banking', 'injection', 1)!;
    const guard = createNodeGuard({ modelDir: join(out, 'base-nobanking'), modelVariant: 'q4', backends: ['node'] });
    try {
      expect(await guard.ready).toMatchObject({ model: 'edgearmor-proxy-nobanking', variant: 'q4' });
      const verdict = await guard.check({ messages: c.messages, tools: c.tools, action: c.action });
      expect(verdict.reason).toBe('model');
      expect(verdict.decision).toMatch(/^(allow|block)$/);
    } finally {
      await guard.dispose();
    }
  }, 120_000);
});
