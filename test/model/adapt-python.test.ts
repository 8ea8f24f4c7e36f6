/**
 * The Python half of `edgearmor adapt` (model/adapt.py) end to end on the tiny fixture model: planted and
 * held-out cases from ~50 short conversations, a few seconds of fine-tuning, export, q4 and manifest, with
 * one JSON event a line on stdout. Also runs the planting checks (model/test_adapt.py). Needs Debian's
 * python3-torch, python3-onnx, python3-numpy and python3-regex; without them the test fails under CI and is
 * skipped elsewhere.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iterateCases } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PY = '/usr/bin/python3';
const hasTorch = requirement(
  spawnSync(PY, ['-c', 'import torch, onnx, numpy, regex'], { stdio: 'ignore' }).status === 0,
  `${PY} with torch, onnx, numpy and regex (.ci/run installs python3-torch, python3-onnx, python3-numpy and python3-regex)`,
);

const ADAPT_TIMEOUT_MS = 120_000;
const UNIT_TIMEOUT_MS = 60_000;
const TRAIN_CONVERSATIONS = 40;
const HOLDOUT_CONVERSATIONS = 10;

const work = mkdtempSync(join(tmpdir(), 'edgearmor-adapt-'));
const base = join(work, 'base');
afterAll(() => rmSync(work, { recursive: true, force: true }));

const env = { ...process.env, PYTHONUNBUFFERED: '1', LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp' };

function jsonl(path: string, rows: unknown[]): void {
  writeFileSync(path, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
}

/** Attack-free conversations: the generator's benign cases with their call as the agent's last turn. */
function conversations(n: number): unknown[] {
  const out: unknown[] = [];
  for (const c of iterateCases({ split: 'train', seed: 7, n: 400 })) {
    if (out.length >= n) break;
    if (c.label !== 'benign' || (c.kind !== 'benign' && c.kind !== 'benign_copy')) continue;
    const call = { name: c.action.name, arguments: c.action.arguments };
    out.push({ id: `conv-${out.length}`, messages: [...c.messages, { role: 'assistant', content: '', tool_calls: [call] }], tools: c.tools });
  }
  return out;
}

function adapt(dir: string, ...extra: string[]) {
  return spawnSync(PY, ['model/adapt.py', '--work', dir, '--base', base, ...extra], { cwd: ROOT, env, encoding: 'utf8', timeout: ADAPT_TIMEOUT_MS });
}

beforeAll(() => {
  mkdirSync(join(base, 'onnx'), { recursive: true });
  copyFileSync(join(ROOT, 'test/fixtures/tiny-proxy/config.json'), join(base, 'config.json'));
  copyFileSync(join(ROOT, 'test/fixtures/tiny-proxy/onnx/model.onnx'), join(base, 'onnx', 'model.onnx'));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(ROOT, 'public/models/edgearmor-proxy', f), join(base, f));
  const convs = conversations(TRAIN_CONVERSATIONS + HOLDOUT_CONVERSATIONS);
  jsonl(join(work, 'traffic-train.jsonl'), convs.slice(0, TRAIN_CONVERSATIONS));
  jsonl(join(work, 'traffic-holdout.jsonl'), convs.slice(TRAIN_CONVERSATIONS));
  jsonl(join(work, 'generator-train.jsonl'), [...iterateCases({ split: 'train', seed: 1, n: 200 })]);
  jsonl(join(work, 'generator-validation.jsonl'), [...iterateCases({ split: 'validation', seed: 1, n: 40 })]);
});

describe.skipIf(!hasTorch)('edgearmor adapt, Python half (model/adapt.py)', () => {
  it('plants attacks with the right labels, from the traffic\'s own tools and values, seeded (model/test_adapt.py)', () => {
    const run = spawnSync(PY, ['model/test_adapt.py'], { cwd: ROOT, encoding: 'utf8', timeout: UNIT_TIMEOUT_MS });
    expect(run.stderr).toMatch(/Ran \d+ tests/);
    expect(run.stderr.trim().split('\n').at(-1)).toBe('OK');
    expect(run.status).toBe(0);
  }, UNIT_TIMEOUT_MS);

  it('fine-tunes the tiny model on traffic, stops once the held-out loss stops improving, and writes a candidate with q4, manifest, holdout cases and JSON progress', () => {
    // A learning rate of 5 wrecks the weights within a few steps; an evaluation after every step, and training
    // stops after --patience 2 of them without a better held-out loss (the budget's stop: test/model/adapt.test.ts).
    const run = adapt(work, '--train-minutes', '1', '--holdout-cases', '20', '--max-len', '512', '--batch-tokens', '2048', '--lr', '5', '--eval-every-minutes', '0', '--patience', '2');
    expect(run.status, run.stderr).toBe(0);
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events.filter((e) => e['event'] === 'stage').map((e) => e['stage'])).toEqual(['import', 'data', 'train', 'export', 'quantize', 'done']);
    const progress = events.filter((e) => e['event'] === 'progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]).toMatchObject({ step: 1, budgetMinutes: 1 });
    expect(Number.isFinite(progress[0]?.['loss'])).toBe(true);
    const evals = events.filter((e) => e['event'] === 'eval');
    expect(evals[0]).toMatchObject({ step: 0 });
    expect(evals.length).toBeGreaterThanOrEqual(2);
    for (const e of evals) expect(Number.isFinite(e['traffic_loss']) && Number.isFinite(e['generator_loss'])).toBe(true);

    const cand = join(work, 'candidate');
    const manifest = JSON.parse(readFileSync(join(cand, 'manifest.json'), 'utf8')) as { files: Record<string, { sha256: string; size: number }> };
    expect(Object.keys(manifest.files).sort()).toEqual(['config.json', 'onnx/model.onnx', 'onnx/model_q4.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    for (const [rel, { sha256, size }] of Object.entries(manifest.files)) {
      const bytes = readFileSync(join(cand, rel));
      expect(bytes.length, rel).toBe(size);
      expect(createHash('sha256').update(bytes).digest('hex'), rel).toBe(sha256);
    }
    expect(readFileSync(join(cand, 'config.json'), 'utf8')).toBe(readFileSync(join(base, 'config.json'), 'utf8'));

    const holdout = readFileSync(join(work, 'holdout-cases.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { conversation: string; label: string; kind: string });
    expect(holdout.length).toBeGreaterThan(10);
    expect(holdout.length).toBeLessThanOrEqual(20);
    expect(new Set(holdout.map((c) => c.label))).toEqual(new Set(['benign', 'injected']));
    const held = new Set(Array.from({ length: HOLDOUT_CONVERSATIONS }, (_, i) => `conv-${TRAIN_CONVERSATIONS + i}`));
    for (const c of holdout) expect(held.has(c.conversation), c.conversation).toBe(true);

    const log = JSON.parse(readFileSync(join(work, 'train-log.json'), 'utf8')) as { steps_done: number; best_step: number; stopped: string; evals: Array<{ step: number; traffic_loss: number }>; counts: { planted: Record<string, number>; lm: number; lm_conversations: number } };
    expect(log.stopped, JSON.stringify(log.evals)).toBe('converged');
    expect(log.steps_done).toBe(log.best_step + 2);
    expect(log.evals.map((e) => e.step)).toEqual(Array.from({ length: log.steps_done + 1 }, (_, i) => i));
    const best = log.evals.find((e) => e.step === log.best_step)!;
    for (const e of log.evals.slice(-2)) expect(e.traffic_loss).toBeGreaterThanOrEqual(best.traffic_loss);
    expect(run.stderr).toMatch(new RegExp(`\\(converged\\); best step ${log.best_step}$`, 'm'));
    // Every conversation is language-modelling data; one longer than the window counts once per window that covers its calls.
    expect(log.counts.lm_conversations).toBe(TRAIN_CONVERSATIONS);
    expect(log.counts.lm).toBeGreaterThanOrEqual(TRAIN_CONVERSATIONS);
    expect(Object.keys(log.counts.planted)).toEqual(expect.arrayContaining(['tool_result_injection/fresh', 'tool_poisoning/recurring']));
  }, ADAPT_TIMEOUT_MS);

  it('trains on a CUDA GPU when asked and torch sees one, and refuses --device cuda where it does not', () => {
    const cuda = spawnSync(PY, ['-c', 'import torch; print(torch.cuda.is_available())'], { encoding: 'utf8' }).stdout.trim() === 'True';
    const dir = join(work, 'cuda');
    mkdirSync(dir, { recursive: true });
    for (const f of ['traffic-train.jsonl', 'traffic-holdout.jsonl', 'generator-train.jsonl', 'generator-validation.jsonl']) copyFileSync(join(work, f), join(dir, f));
    const run = adapt(dir, '--device', 'cuda', '--train-minutes', '0.05', '--holdout-cases', '20', '--max-len', '512', '--batch-tokens', '2048');
    if (cuda) {
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/ min on cuda \(/);
    } else {
      expect(run.status).toBe(2);
      expect(run.stderr.trim()).toMatch(/^edgearmor adapt: --device cuda: torch .* has no such device here \(cpu, or cuda where torch sees a GPU\)$/);
      expect(existsSync(join(dir, 'candidate'))).toBe(false);
    }
  }, ADAPT_TIMEOUT_MS);

  it('exits 2 with one line on bad input', () => {
    const empty = join(work, 'empty');
    mkdirSync(empty, { recursive: true });
    const missing = adapt(empty, '--train-minutes', '0.01');
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect(missing.stderr).toMatch(/traffic-train\.jsonl/);
    writeFileSync(join(empty, 'traffic-train.jsonl'), '');
    writeFileSync(join(empty, 'traffic-holdout.jsonl'), '');
    writeFileSync(join(empty, 'generator-train.jsonl'), '');
    expect(adapt(empty, '--train-minutes', '0.01').stderr).toMatch(/has no conversations/);
    const noOnnx = spawnSync(PY, ['model/adapt.py', '--work', work, '--base', empty, '--train-minutes', '0.01'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(noOnnx.status).toBe(2);
    expect(noOnnx.stderr).toMatch(/no onnx\/model\.onnx/);
    expect(existsSync(join(empty, 'candidate'))).toBe(false);
  }, UNIT_TIMEOUT_MS);
});
