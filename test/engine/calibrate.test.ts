/**
 * `edgearmor calibrate` on the tiny random model: injections planted into a small attack-free traffic file,
 * scored without training, the point written into the model directory (manifest re-pinned), into a copy
 * (--out), or for a remote proxy into edgearmor.config.json; later checks use it and say so. The model's
 * weights are random, so its rates and ROC-AUC say nothing of detection: the tests check structure and
 * consistency (the point replays to the rates reported, the files agree with the report), never quality.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrate, type CalibrateReport } from '../../src/adapt/calibrate.js';
import { calibrateSummary } from '../../src/cli/calibrate.js';
import { thresholdsOf } from '../../src/core/calibration.js';
import { InvalidInputError, InvalidOptionsError, ModelLoadError } from '../../src/core/errors.js';
import { resolveOptions } from '../../src/core/options.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { startProxyServer, type RunningProxyServer } from '../../src/engine/proxy-server.js';
import { createNodeGuard } from '../../src/node.js';
import { iterateCases } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const CALIBRATE_TIMEOUT_MS = 90_000;
const CLI_TIMEOUT_MS = 90_000;
// Few planted checks keep each run to seconds on the tiny model (a budget would plant what the machine's speed allows).
const CASES = 24;
const REMOTE_CASES = 16;
const CONVERSATIONS = 52;
const hasPython = requirement(spawnSync('python3', ['-c', 'import json'], { stdio: 'ignore' }).status === 0, 'python3 (calibrate plants injections with it)');

const work = mkdtempSync(join(tmpdir(), 'edgearmor-calibrate-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Attack-free conversations: the generator's user-driven calls, each ending with the call the agent made. */
function writeTraffic(n: number, name: string): string {
  const lines: string[] = [];
  for (const c of iterateCases({ split: 'validation', seed: 5, n: 1200 })) {
    if (c.label !== 'benign' || c.kind !== 'benign' || !c.messages.some((m) => m.role === 'tool')) continue;
    const messages = [...c.messages, { role: 'assistant', content: '', tool_calls: [{ name: c.action.name, arguments: c.action.arguments }] }];
    lines.push(JSON.stringify({ id: c.id, messages, tools: c.tools }));
    if (lines.length === n) break;
  }
  const path = join(work, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** What every report must hold together, whatever the random model scored. */
function expectConsistent(r: CalibrateReport, targetFpr: number): void {
  expect(r.cases.scored).toBeGreaterThan(0);
  expect(r.cases.injected + r.cases.benign).toBe(r.cases.scored);
  expect(r.chosen.injected).toBe(r.cases.injected);
  expect(r.chosen.benign).toBe(r.cases.benign);
  // Within the target unless forced blocks alone exceed it.
  expect(r.chosen.fpr).toBeLessThanOrEqual(Math.max(targetFpr, r.chosen.forcedFpr));
  // Every verdict replays to the guard's own decision at the options it was judged with.
  expect(r.replayMismatches).toBe(0);
  // The options written are the chosen point (signals no benign check carried keep the earlier threshold).
  const written = thresholdsOf(resolveOptions(r.options));
  expect(written.userWeight).toBe(r.chosen.userWeight);
  expect(written.tau).toBe(r.chosen.tau);
  for (const [signal, key] of [
    ['descriptions', 'descriptionMargin'],
    ['firstCallDescriptions', 'firstCallDescriptionMargin'],
    ['air', 'airThreshold'],
    ['firstCallAir', 'firstCallAirThreshold'],
  ] as const) {
    if (r.signals[signal].benign > 0) expect(written[key], key).toBe(r.chosen[key]);
  }
  // The unlikely-tool rule is written exactly where the point turned it on (off: not written, null).
  expect(written.unlikelyToolThreshold).toBe(r.chosen.unlikelyToolThreshold);
}

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE || !hasPython)('edgearmor calibrate on the tiny model', () => {
  let traffic: string;
  let model: string;

  beforeAll(async () => {
    traffic = writeTraffic(CONVERSATIONS, 'traffic.jsonl');
    model = await makeTinyGuardModel();
  });

  it('writes the point into the model directory, re-pins its manifest, and later checks use it and name it', async () => {
    const report = await calibrate({ traffic, model, cases: CASES, targetFpr: 0.1, minutes: 5 });
    expectConsistent(report, 0.1);
    expect(report.cases.planted).toBeLessThanOrEqual(CASES);
    expect(report.cases.scored).toBe(report.cases.planted);
    expect(report.traffic).toMatchObject({ conversations: CONVERSATIONS, withToolCalls: CONVERSATIONS, formats: { guard: CONVERSATIONS } });
    expect(report.written).toEqual({ kind: 'model', path: join(model, 'guard-options.json') });
    // The summary the CLI prints says the numbers are in-sample and what was written.
    const summary = calibrateSummary(report);
    expect(summary).toContain(`planted ${report.cases.planted} checks, scored ${report.cases.scored} in the budget`);
    expect(summary).toContain('in-sample (chosen and measured on the same planted traffic), target FPR 0.1:');
    expect(summary).toMatch(new RegExp(`chosen: .* w ${report.chosen.userWeight}, tau ${report.chosen.tau}, `));
    expect(summary).toContain(`wrote ${join(model, 'guard-options.json')} (manifest re-pinned)`);

    const file = JSON.parse(readFileSync(join(model, 'guard-options.json'), 'utf8')) as Record<string, unknown>;
    expect(file).toEqual({
      schema: 1,
      options: report.options,
      source: 'edgearmor calibrate',
      created: report.created,
      calibration: { targetFpr: 0.1, injected: report.cases.injected, benign: report.cases.benign, realCalls: report.cases.realCalls, tpr: report.chosen.tpr, fpr: report.chosen.fpr, rocAuc: report.chosen.rocAuc },
    });
    const manifest = JSON.parse(readFileSync(join(model, 'manifest.json'), 'utf8')) as { files: Record<string, { sha256: string }> };
    expect(manifest.files['guard-options.json']?.sha256).toBe(sha256(join(model, 'guard-options.json')));

    // The guard loads the re-pinned directory and judges with the point; its status carries the record.
    const guard = createNodeGuard({ modelDir: model, backends: ['node'] });
    try {
      const status = await guard.ready;
      expect(status.modelOptions).toMatchObject({ source: 'edgearmor calibrate', created: report.created, calibration: { targetFpr: 0.1 }, overridden: [] });
      expect(status.modelOptions?.applied).toMatchObject({ userWeight: report.chosen.userWeight, tau: report.chosen.tau });
      expect(status.familiarity.threshold).toBe(report.familiarity.threshold ?? -4.92);
    } finally {
      await guard.dispose();
    }

    // A second calibration starts from the first's point: its "before" is the point written.
    const again = await calibrate({ traffic, model, cases: REMOTE_CASES, targetFpr: 0.1, minutes: 5, seed: 2 });
    expect(again.before).toMatchObject({ userWeight: report.chosen.userWeight, tau: report.chosen.tau });

    // edgearmor check names the operating point on stderr.
    const one = JSON.parse(readFileSync(traffic, 'utf8').split('\n')[0]!) as { messages: Array<{ role: string }> };
    const cases = join(work, 'case.json');
    const last = one.messages.length - 1;
    writeFileSync(cases, JSON.stringify({ messages: one.messages.slice(0, last), action: (one.messages[last] as unknown as { tool_calls: Array<{ name: string; arguments: unknown }> }).tool_calls[0] }));
    const check = spawnSync(NODE, [CLI, 'check', cases, '--json', '--model', model], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS, cwd: work });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stderr).toMatch(new RegExp(`operating point: edgearmor calibrate, ${again.created.slice(0, 10)}, FPR 0.1 on ${again.cases.scored} checks \\(${again.cases.realCalls} real calls\\)`));
    expect(JSON.parse(check.stdout)).toMatchObject({ tau: again.chosen.tau, user_weight: again.chosen.userWeight });
  }, CALIBRATE_TIMEOUT_MS);

  it('writes a copy with --out through the CLI, leaving the source directory as it was', () => {
    const source = join(work, 'source-manifest.json');
    writeFileSync(source, readFileSync(join(model, 'manifest.json')));
    const out = join(work, 'copy');
    mkdirSync(out); // an empty directory is taken
    const run = spawnSync(NODE, [CLI, 'calibrate', traffic, '--model', model, '--out', out, '--cases', String(REMOTE_CASES), '--minutes', '3', '--target-fpr', '0.2', '--json'], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS, cwd: work });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as CalibrateReport;
    expectConsistent(report, 0.2);
    expect(report.written).toEqual({ kind: 'copy', path: join(out, 'guard-options.json') });
    expect(JSON.parse(readFileSync(join(out, 'guard-options.json'), 'utf8'))).toMatchObject({ options: report.options, calibration: { targetFpr: 0.2 } });
    expect(readFileSync(join(model, 'manifest.json'), 'utf8')).toBe(readFileSync(source, 'utf8'));
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as { files: Record<string, { sha256: string }> };
    for (const [path, entry] of Object.entries(manifest.files)) expect(entry.sha256, path).toBe(sha256(join(out, path)));
    // Nothing staged is left beside it.
    expect(readdirSync(work).filter((f) => f.includes('partial'))).toEqual([]);
  }, CALIBRATE_TIMEOUT_MS);

  it('refuses bad input with one typed error before any scoring', async () => {
    const few = writeTraffic(3, 'few.jsonl');
    const noManifest = join(work, 'no-manifest');
    mkdirSync(noManifest);
    const full = join(work, 'full');
    mkdirSync(full);
    writeFileSync(join(full, 'x'), '');
    const refusal = async (o: Partial<Parameters<typeof calibrate>[0]>) => calibrate({ traffic, model, cases: CASES, ...o }).then(() => null, (e: unknown) => e as Error);
    expect(await refusal({ traffic: join(work, 'missing.jsonl') })).toBeInstanceOf(InvalidInputError);
    expect((await refusal({ traffic: few }))?.message).toMatch(/3 conversations with a tool call .*calibration needs at least 50/);
    for (const targetFpr of [0, 0.6, Number.NaN]) expect((await refusal({ targetFpr }))?.message).toMatch(/target FPR: received .*; allowed: a fraction above 0 and at most 0\.5/);
    expect((await refusal({ minutes: 0 }))?.message).toMatch(/minutes: received 0; allowed: a positive number/);
    const missing = await refusal({ model: noManifest });
    expect(missing).toBeInstanceOf(ModelLoadError);
    expect(missing?.message).toMatch(/no manifest\.json/);
    expect((await refusal({ out: full }))?.message).toMatch(/exists and is not empty/);
    const { model: _model, ...embeddedOptions } = { traffic, model, cases: CASES };
    const embedded = await calibrate(embeddedOptions).then(() => null, (e: unknown) => e as Error);
    expect(embedded).toBeInstanceOf(InvalidOptionsError);
    expect(embedded?.message).toMatch(/--out <dir> is required with the embedded model/);

    // Aborted: the abort is the answer, and the model directory's options are left as they were.
    const options = readFileSync(join(model, 'guard-options.json'), 'utf8');
    expect((await refusal({ signal: AbortSignal.abort() }))?.name).toMatch(/Abort/); // the guard's GuardAbortedError, or the DOM's AbortError between checks
    expect(readFileSync(join(model, 'guard-options.json'), 'utf8')).toBe(options);

    // The CLI: one line, exit 2.
    for (const [args, pattern] of [
      [[few, '--model', model], /calibration needs at least 50/],
      [[traffic, '--minutes', '-1', '--model', model], /minutes: received -1/],
      [[traffic], /--out <dir> is required with the embedded model/],
    ] as const) {
      const run = spawnSync(NODE, [CLI, 'calibrate', ...args], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS, cwd: work });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(pattern);
    }
  }, CALIBRATE_TIMEOUT_MS);

  describe('with a remote proxy (serve-proxy)', () => {
    let engine: ProxyEngine;
    let server: RunningProxyServer;

    beforeAll(async () => {
      engine = await createEngine(await loadModelFiles(directoryReader(model), 'q4'), { backend: 'node' });
      server = await startProxyServer({ engine, servedModelName: 'tiny' });
    });

    afterAll(async () => {
      await server?.close();
      await engine?.dispose();
    });

    it('merges the point into edgearmor.config.json, keeping the options it held', async () => {
      const config = join(work, 'edgearmor.config.json');
      // An earlier point's threshold is replaced or removed; the user's own options stay. Without description
      // leave-one-out (fewer variants: the remote path is the slow one here), no description margin is placed.
      const own = { trustedTools: ['read_file'], toolPoisoning: { leaveOneOut: false } };
      writeFileSync(config, JSON.stringify({ ...own, tau: 3, toolPoisoning: { ...own.toolPoisoning, leaveOneOutMargin: 9 } }));
      const report = await calibrate({ traffic, model, remoteProxy: { url: server.url, model: 'tiny' }, configFile: config, cases: REMOTE_CASES, targetFpr: 0.1, guardOptions: own });
      expectConsistent(report, 0.1);
      expect(report.signals.descriptions.benign).toBe(0);
      expect(report.remote).toBe(server.url);
      expect(report.written).toEqual({ kind: 'config', path: config });
      const written = JSON.parse(readFileSync(config, 'utf8')) as { toolPoisoning?: Record<string, unknown> };
      expect(written).toMatchObject({ ...report.options, trustedTools: ['read_file'], toolPoisoning: { leaveOneOut: false } });
      expect(written.toolPoisoning?.['leaveOneOutMargin']).toBeUndefined();
      expect(existsSync(`${config}.partial-${process.pid}`)).toBe(false);
      await expect(calibrate({ traffic, model, remoteProxy: { url: server.url, model: 'tiny' }, out: join(work, 'x') })).rejects.toThrow(/with a remote proxy calibrate writes edgearmor\.config\.json/);
    }, CALIBRATE_TIMEOUT_MS);
  });
});
