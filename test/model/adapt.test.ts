/**
 * `edgearmor adapt` end to end on a tiny fixture: the TypeScript side (traffic, screening, scoring,
 * calibration, the model directory) around model/adapt.py (planting, fine-tune, export, q4), with the
 * tiny random model as the base so the whole pipeline runs in well under a minute. Whether adaptation
 * helps is measured by lab/eval/adapt_protocol.py on the embedded model, not here.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { adapt, type AdaptProgress } from '../../src/adapt/adapt.js';
import { SCORING_SHARE } from '../../src/adapt/holdout.js';
import { FAMILIARITY_MIN_CHECKS } from '../../src/core/familiarity.js';
import { reportTable } from '../../src/cli/adapt.js';
import { createNodeGuard, buildManifest } from '../../src/node.js';
import { iterateCases } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where Debian's libopenblas0-openmp puts its BLAS (.ci/run installs it with torch). */
const DEBIAN_OPENBLAS = '/usr/lib/x86_64-linux-gnu/openblas-openmp';
const hasTorch = requirement(
  spawnSync('/usr/bin/python3', ['-c', 'import torch, onnx, numpy, regex'], { stdio: 'ignore' }).status === 0,
  '/usr/bin/python3 with torch, onnx, numpy and regex (.ci/run installs python3-torch, python3-onnx, python3-numpy and python3-regex)',
);

const work = mkdtempSync(join(tmpdir(), 'edgearmor-adapt-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The tiny random model with the embedded tokenizer: a base directory adaptation can start from. */
async function tinyBase(): Promise<string> {
  const dir = join(work, 'base');
  mkdirSync(dir, { recursive: true });
  cpSync(join(ROOT, 'test/fixtures/tiny-proxy/onnx'), join(dir, 'onnx'), { recursive: true });
  copyFileSync(join(ROOT, 'test/fixtures/tiny-proxy/config.json'), join(dir, 'config.json'));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(ROOT, 'public/models/edgearmor-proxy', f), join(dir, f));
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(await buildManifest(dir, 'tiny-proxy')));
  return dir;
}

/** What a run may pass its budget by: the checks of the conversation in flight when a stage's deadline passes, and writing the model directory. */
const BUDGET_SLACK_MINUTES = 0.1;
const ADAPT_TEST_TIMEOUT_MS = 180_000;

/** Attack-free conversations: the generator's user-driven calls, each ending with the call the agent made. */
function traffic(n: number): { path: string; texts: string[] } {
  const lines: string[] = [];
  const texts: string[] = [];
  // About one generated case in 17 is such a conversation.
  for (const c of iterateCases({ split: 'validation', seed: 5, n: Math.max(1200, 20 * n) })) {
    if (c.label !== 'benign' || c.kind !== 'benign' || !c.messages.some((m) => m.role === 'tool')) continue;
    const messages = [...c.messages, { role: 'assistant', content: '', tool_calls: [{ name: c.action.name, arguments: c.action.arguments }] }];
    texts.push(...c.messages.filter((m) => m.role === 'user').map((m) => m.content));
    lines.push(JSON.stringify({ id: c.id, messages, tools: c.tools }));
    if (lines.length === n) break;
  }
  const path = join(work, 'traffic.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { path, texts };
}

describe.skipIf(!hasTorch)('edgearmor adapt on a tiny model', () => {
  it('screens, fine-tunes, recalibrates on held-out traffic and writes a model directory the guard loads with its options; an abort while training keeps the best step and still scores and writes it', async () => {
    const base = await tinyBase();
    const { path, texts } = traffic(56);
    const out = join(work, 'adapted');
    const events: AdaptProgress[] = [];
    // Ctrl-C once, as the CLI passes it on: at the first training step.
    const interrupt = new AbortController();
    const report = await adapt({
      traffic: path,
      out,
      baseModel: base,
      // The budget's split is not the point here: a fixed training time keeps a loaded machine from leaving none.
      minutes: 5,
      seed: 3,
      force: true,
      // Screening stops after a few conversations, as it does on a user's large traffic: the rest are not
      // trained on, and the held-out cases planted before and after screening must still be the same.
      training: { maxLen: 512, batchTokens: 2048, holdoutCases: 24, generatorCases: 60, trainMinutes: 0.15, screenMinutes: 0.002, probeCases: 10 },
      onProgress: (e) => {
        events.push(e);
        if (e.stage === 'train') interrupt.abort();
      },
      signal: interrupt.signal,
    });

    // Split and screening: the screening budget ran out, so some training conversations are not used.
    expect(report.traffic.withToolCalls).toBe(56);
    // Held out: as many conversations as hold the planted real calls (40% of 24 cases, one call each), at least 10.
    expect(report.traffic.holdoutConversations).toBe(10);
    expect(report.traffic.trainConversations).toBe(46);
    expect(report.traffic.usedConversations).toBeGreaterThan(0);
    expect(report.traffic.unscreenedConversations).toBeGreaterThan(0);
    expect(report.traffic.usedConversations + report.traffic.unscreenedConversations).toBe(46);
    // Screening drew across the strata (first tool called): what it reached is counted per stratum.
    const strata = report.traffic.screenedByStratum;
    expect(strata.length).toBeGreaterThan(1);
    expect(strata.reduce((n, x) => n + x.conversations, 0)).toBe(46);
    expect(strata.reduce((n, x) => n + x.screened, 0)).toBe(report.traffic.usedConversations);
    // Screened at the base's point recalibrated on the held-out traffic.
    expect(report.traffic.screenPoint).toEqual({ userWeight: report.holdout.baseRecalibrated.userWeight, tau: report.holdout.baseRecalibrated.tau });
    expect(report.training['counts']).toMatchObject({
      traffic_train_conversations: report.traffic.usedConversations,
      traffic_unscreened_conversations: report.traffic.unscreenedConversations,
    });
    expect(events.some((e) => e.stage === 'screen')).toBe(true);
    expect(events.some((e) => e.stage === 'train')).toBe(true);
    // torch's speed is measured before anything is planned, and reported with the same numbers.
    const machine = events.find((e) => e.stage === 'machine');
    expect(machine).toMatchObject({ stage: 'machine', matmulGflops: report.machine.matmulGflops, blas: report.machine.blas, device: report.machine.device, gpu: report.machine.gpu });
    // The default device is a CUDA GPU where torch sees one, else the CPU.
    expect(report.machine.device).toBe(report.machine.gpu === null ? 'cpu' : 'cuda');
    expect(report.machine.matmulGflops).toBeGreaterThan(0);
    // The BLAS named is the library torch multiplied with: Debian's torch is built against the generic libblas,
    // which the alternatives (and adapt's library path) point at OpenBLAS where it is installed.
    if (existsSync(join(DEBIAN_OPENBLAS, 'libblas.so.3'))) expect(report.machine.blas).toBe('openblas');
    expect(report.machine.blas).not.toMatch(/^(generic|unknown)$/);
    // The table's step count, device and why training stopped come from the training log.
    expect(report.training['steps_done']).toBeGreaterThan(0);
    expect(report.training['stopped']).toBe('interrupted');
    const where = report.machine.device === 'cpu' ? 'the CPU \\(2 threads\\)' : 'the GPU \\(.+\\)';
    // How far training got through its data: the tokens it trained on over the training data's own.
    const trainTokens = (report.training['counts'] as { train_tokens: number }).train_tokens;
    const passes = (Number(report.training['tokens_seen']) / trainTokens).toFixed(1);
    expect(reportTable(report, out)).toMatch(new RegExp(`training: [\\d.]+ min on ${where}, ${String(report.training['steps_done'])} steps, ${String(report.training['tokens_seen'])} tokens \\(${passes} passes over the training data's ${trainTokens}\\), .*; stopped: interrupted \\(Ctrl-C\\)`));

    // Held-out scoring: replaying each verdict at the guard's own options reproduces it.
    expect(report.holdout.cases).toBeGreaterThan(0);
    expect(report.holdout.injected).toBeGreaterThan(0);
    expect(report.holdout.realCalls).toBeGreaterThan(0);
    expect(report.holdout.replayMismatches).toBe(0);
    // Within the target, unless blocks no point can lift (MindGuard, failures) already exceed it.
    expect(report.holdout.adapted.fpr).toBeLessThanOrEqual(Math.max(report.chosen.targetFpr, report.holdout.adapted.forcedFpr) + 1e-9);
    expect(report.chosen).toMatchObject({ userWeight: report.holdout.adapted.userWeight, tau: report.holdout.adapted.tau });

    // How well the base knew the agent, on the real held-out calls: the tiny base's random weights predict none of them.
    const { familiarity } = report.holdout;
    expect(familiarity.base.threshold).toBe(-4.92);
    expect(familiarity.base.checks).toBeGreaterThan(0);
    expect(familiarity.base.checks).toBeLessThanOrEqual(report.holdout.realCalls);
    expect(familiarity.base.below).toBe(familiarity.base.checks);
    expect(familiarity.baseMedian).toBeLessThan(-4.92);
    expect(typeof familiarity.adaptedMedian).toBe('number');
    expect(reportTable(report, out)).toMatch(new RegExp(`real held-out calls, median log-prob per action token: base -[\\d.]+, adapted -[\\d.]+; base model ${familiarity.base.below} of ${familiarity.base.checks} below -4.92`));

    // Both guards checked the forgetting probe, of the size asked for.
    expect(report.generator?.cases).toBe(10);

    // The directory: q4, tokenizer, config, the options and the report, every file pinned.
    expect(report.written).toBe(true);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as { files: Record<string, unknown> };
    for (const f of ['onnx/model_q4.onnx', 'tokenizer.json', 'tokenizer_config.json', 'config.json', 'guard-options.json', 'adapt-report.json']) {
      expect(existsSync(join(out, f)), f).toBe(true);
      expect(Object.keys(manifest.files), f).toContain(f);
    }
    const written = readFileSync(join(out, 'adapt-report.json'), 'utf8');
    expect(JSON.parse(written)).toMatchObject({ chosen: report.chosen, written: true });
    // The report holds no traffic text.
    for (const t of texts) expect(written.includes(t), t).toBe(false);

    // The guard loads it unchanged and applies the recalibrated point; a caller's tau still wins.
    const guard = createNodeGuard({ modelDir: out });
    const pinned = createNodeGuard({ modelDir: out, tau: 0.5 });
    try {
      const c = [...iterateCases({ split: 'test', seed: 1, n: 20 })].find((x) => x.messages.some((m) => m.role === 'tool'));
      const verdict = await guard.check({ messages: c!.messages, action: c!.action, tools: c!.tools });
      // The familiarity threshold is the adapted model's own (the base's does not carry over to the adapted
      // weights): the 10% quantile of its log-probabilities of the real held-out calls, 10 of the 24 cases here.
      const threshold = report.holdout.familiarity.adaptedThreshold;
      expect(report.holdout.realCalls).toBeGreaterThanOrEqual(FAMILIARITY_MIN_CHECKS);
      expect(threshold).toBeTypeOf('number');
      expect(threshold!).toBeLessThanOrEqual(familiarity.adaptedMedian!);
      const applied = (await guard.status()).modelOptions?.applied ?? {};
      expect(applied).toMatchObject({ userWeight: report.chosen.userWeight, tau: report.chosen.tau, familiarityThreshold: threshold });
      // The description margins and AIR thresholds chosen with them, where the held-out checks carried those signals.
      const chosen = {
        'toolPoisoning.leaveOneOutMargin': report.chosen.descriptionMargin,
        'toolPoisoning.beforeToolResults.leaveOneOutMargin': report.chosen.firstCallDescriptionMargin,
        'toolPoisoning.mindguard.airThreshold': report.chosen.airThreshold,
        'toolPoisoning.beforeToolResults.airThreshold': report.chosen.firstCallAirThreshold,
        unlikelyToolThreshold: report.chosen.unlikelyToolThreshold,
      };
      // The unlikely-tool rule is in the file exactly where the point turned it on.
      expect(applied['unlikelyToolThreshold'] ?? null).toBe(report.chosen.unlikelyToolThreshold);
      for (const [path, value] of Object.entries(applied)) if (path in chosen) expect(value, path).toBe(chosen[path as keyof typeof chosen]);
      expect((await guard.status()).familiarity).toMatchObject({ threshold, checks: 1 });
      expect(verdict.attribution?.tau).toBe(report.chosen.tau);
      await pinned.check({ messages: c!.messages, action: c!.action, tools: c!.tools });
      expect((await pinned.status()).modelOptions?.overridden).toEqual(['tau']);
    } finally {
      await guard.dispose();
      await pinned.dispose();
    }
  }, ADAPT_TEST_TIMEOUT_MS);

  it('refuses, naming the minutes, a budget that leaves screening no conversation to train on', async () => {
    const base = await tinyBase();
    const { path } = traffic(56);
    const run = adapt({ traffic: path, out: join(work, 'none-screened'), baseModel: base, minutes: 5, training: { holdoutCases: 12, generatorCases: 20, screenMinutes: 0, probeCases: 2 } });
    await expect(run).rejects.toThrow(/^--minutes 5 left screening 0\.00 min after held-out scoring \([\d.]+ min\), and it reached none of the \d+ training conversations: nothing to train on\. Give more minutes, or --screen off/);
    await expect(run).rejects.toMatchObject({ name: 'InvalidOptionsError', details: { option: 'minutes' } });
    expect(existsSync(join(work, 'none-screened'))).toBe(false);
  }, ADAPT_TEST_TIMEOUT_MS);

  it('keeps a one-minute budget on its own, every stage stopped in time, and says where each minute went', async () => {
    const base = await tinyBase();
    // More traffic than screening can reach in its minutes, as a user's is: the scoring third must hold.
    const { path } = traffic(300);
    const out = join(work, 'budget');
    const budget = 1;
    const report = await adapt({
      traffic: path,
      out,
      baseModel: base,
      minutes: budget,
      seed: 4,
      force: true,
      // No fixed training or screening time: the budget alone decides them.
      training: { maxLen: 512, batchTokens: 2048, generatorCases: 60, probeCases: 10 },
    });
    const m = report.minutes;
    expect(m.budget).toBe(budget);
    expect(m.total, JSON.stringify({ minutes: m, python: report.training['budget'] })).toBeLessThanOrEqual(budget + BUDGET_SLACK_MINUTES);
    // Every stage is accounted: the parts add up to the total, less what lies between them (reading the traffic, choosing points).
    // On the CPU training runs beside screening from its start, on the screened conversations as they are handed over.
    const beside = report.training['besideScreening'] === true;
    expect(beside).toBe(report.machine.device === 'cpu');
    if (beside) expect((report.training['stream'] as unknown[]).length).toBeGreaterThan(0);
    expect(report.training['counts']).toMatchObject({ traffic_train_conversations: report.traffic.usedConversations, traffic_unscreened_conversations: report.traffic.unscreenedConversations });
    const parts = m.machine + m.plant + m.holdoutBase + (beside ? Math.max(m.screen, m.train) : m.screen + m.train) + m.holdoutAdapted + m.write;
    expect(parts).toBeLessThanOrEqual(m.total + 1e-9);
    expect(m.total - parts).toBeLessThan(0.1 * budget);
    expect(m.score).toBeGreaterThanOrEqual(m.holdoutBase + m.holdoutAdapted - 1e-9);
    // Screening, both held-out passes and the generator probe: a third of the budget, the rest is training's,
    // though screening had conversations left.
    expect(report.traffic.unscreenedConversations).toBeGreaterThan(0);
    expect(m.screen + m.score, JSON.stringify(m)).toBeLessThanOrEqual(budget * SCORING_SHARE + BUDGET_SLACK_MINUTES);
    // Planted for the operating point's precision (3%: 130 benign, 200 cases) or fewer where the time says so.
    expect(report.holdout.plan.benignNeeded).toBe(130);
    expect(report.holdout.cases).toBeLessThanOrEqual(200);
    expect(report.holdout.scored.adapted).toBeLessThanOrEqual(report.holdout.scored.base);
    expect(report.holdout.scored.adapted).toBeGreaterThan(0);
    // model/adapt.py was given a wall time inside the budget, and planned its training within it (on a loaded
    // machine its own evaluation and export can leave no training at all: the steps are not asserted).
    const planned = report.training['budget'] as { wall_minutes: number; train_minutes: number };
    expect(planned.wall_minutes).toBeLessThan(budget);
    expect(planned.train_minutes).toBeLessThan(planned.wall_minutes);
    expect(m.train).toBeLessThanOrEqual(planned.wall_minutes + BUDGET_SLACK_MINUTES);
  }, ADAPT_TEST_TIMEOUT_MS);
});
