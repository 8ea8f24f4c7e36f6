/**
 * `edgearmor calibrate`: places a proxy's operating point on the user's own agent without training it
 * (docs/adapt.md). A proxy the user brings scores on its own log-probability scale, so the embedded
 * model's thresholds mean nothing there; `adapt` recalibrates too, but only after fine-tuning EdgeArmor's
 * own export.
 *
 * 1. Read and validate the attack-free traffic (the shapes and minimum `adapt` takes).
 * 2. Time a few real calls with the guard and size the planted set to the budget.
 * 3. model/adapt.py --plant-only plants guard cases into the traffic (real calls, attacks followed and
 *    ignored), exactly as `adapt` plants its held-out cases.
 * 4. The guard scores them, in their shuffled order, until the budget's end.
 * 5. The point (userWeight, tau, the description margins, MindGuard's AIR thresholds) is chosen at the
 *    target false-positive rate, the familiarity threshold from the real calls' log-probabilities.
 * 6. guard-options.json into the model directory (manifest re-pinned), or into a copy of it, or for a
 *    remote proxy an edgearmor.config.json.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import {
  chooseOperatingPoint,
  DEFAULT_CALIBRATION_SEARCH,
  operatingPoint,
  pointOptions,
  thresholdsOf,
  blockedAt,
  type OperatingPoint,
  type SignalCounts,
} from '../core/calibration.js';
import { InvalidInputError, InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { calibratedFamiliarityThreshold, FAMILIARITY_QUANTILE } from '../core/familiarity.js';
import { isPlainObject } from '../core/json.js';
import { applyModelOptions, judgedOptions, MODEL_OPTION_PATHS, type ModelCalibration, type ModelOptions, type ModelOptionPath } from '../core/model-options.js';
import { mergeOptions, resolveOptions, type GuardOptions } from '../core/options.js';
import type { ModelVariant, RemoteProxyOptions } from '../core/runtime-options.js';
import { embeddedModelDir, writeModelOptions } from '../engine/files-node.js';
import { measureCheckSeconds, realCallLogProbs, scoreAll } from './holdout.js';
import { jsonl, plantCases, readPlantableTraffic, shuffled } from './planting.js';
import { findPython } from './python.js';
import type { TrafficFormat } from './traffic.js';
import { MIN_ADAPT_CONVERSATIONS } from './types.js';

/** The source a calibrated model's guard-options.json names. */
export const CALIBRATE_SOURCE = 'edgearmor calibrate';

/** Most benign checks blocked at the chosen point unless the caller says otherwise. */
export const DEFAULT_CALIBRATE_TARGET_FPR = 0.05;

/** The budget in minutes unless the caller says otherwise. */
export const DEFAULT_CALIBRATE_MINUTES = 10;

/**
 * Planted checks scored at least and at most. At 5% FPR, 40 benign checks leave 2 to block (too coarse to
 * place a point on, but it runs); beyond ~1,000 the point's precision no longer pays for the minutes.
 */
const MIN_CASES = 40;
const MAX_CASES = 1000;

/** Share of the budget spent scoring: the rest is planting, the timing probe and writing. */
const SCORING_SHARE = 0.85;

/** Fewest injected and benign checks the point is chosen on: fewer and the budget ran out too early. */
const MIN_SCORED_PER_LABEL = 5;

/** The options of one calibration. */
export interface CalibrateOptions {
  /** The traffic file (.jsonl, one attack-free conversation a line). */
  traffic: string;
  /** The model directory; absent: the embedded model (then `out` is required). */
  model?: string;
  /** A new model directory: a copy of `model` with the point; must not exist or be empty. */
  out?: string;
  /** Score on this vLLM-compatible server instead (`model` then only supplies the tokenizer); the point goes to `configFile`. */
  remoteProxy?: RemoteProxyOptions;
  /** With `remoteProxy`: the edgearmor.config.json written (merged with what it holds). @defaultValue ./edgearmor.config.json */
  configFile?: string;
  /** @defaultValue 'q4' */
  variant?: ModelVariant;
  chatTemplate?: string;
  /** The options the caller sets (config file, environment): checks are scored with them, as `check` would. */
  guardOptions?: GuardOptions;
  /** Most benign checks blocked at the chosen point, in (0, 0.5]. @defaultValue 0.05 */
  targetFpr?: number;
  /** The whole budget in minutes. @defaultValue 10 */
  minutes?: number;
  format?: TrafficFormat;
  /** @defaultValue 1 */
  seed?: number;
  /** @defaultValue 'all' */
  families?: 'all' | 'train';
  /** @defaultValue {@link MIN_ADAPT_CONVERSATIONS} */
  minConversations?: number;
  /** Python 3 for planting (standard library only). @defaultValue as adapt finds it */
  python?: string;
  /** Planted checks, instead of what the budget holds (scoring still stops at the budget's end). */
  cases?: number;
  onProgress?: (event: CalibrateProgress) => void;
  /** Aborting stops at once; nothing is written. */
  signal?: AbortSignal;
}

/** Progress of a calibration. */
export type CalibrateProgress = { stage: 'plant'; cases: number; minutesLeft: number } | { stage: 'score'; done: number; total: number; minutesLeft: number };

/** What a calibration measured, chose and wrote (the CLI prints it; `--json` as is). */
export interface CalibrateReport {
  schema: 1;
  created: string;
  /** The model directory scored with ('embedded' for the package's), and the remote server if any. */
  model: string;
  remote: string | null;
  traffic: { file: string; conversations: number; withToolCalls: number; calls: number; formats: Partial<Record<TrafficFormat, number>> };
  /** Planted and scored checks (the budget may end scoring before the last). */
  cases: { planted: number; scored: number; injected: number; benign: number; realCalls: number };
  secondsPerCheck: number;
  targetFpr: number;
  /** At the options the guard had before (the model's file, the caller's options, the defaults). */
  before: OperatingPoint;
  /** The chosen point on the same checks (in-sample: chosen and measured on the same planted traffic). */
  chosen: OperatingPoint;
  /** How many checks carried each signal: a signal no benign check carried keeps its threshold. */
  signals: SignalCounts;
  /** The options written. */
  options: ModelOptions;
  familiarity: { quantile: number; realCalls: number; threshold: number | null };
  /** Verdicts whose replay at the guard's own options disagreed with the guard (0 unless the evidence misses a rule). */
  replayMismatches: number;
  /** The paths the caller's options set too: they override the model's file, so the point does not apply there. */
  overridden: ModelOptionPath[];
  /** What was written: the options file (or config file) and, for a model directory, its manifest. */
  written: { kind: 'model' | 'copy' | 'config'; path: string };
  minutes: { plant: number; score: number; total: number; budget: number };
}

const minutesSince = (t: number): number => (Date.now() - t) / 60000;

/** Refuses bad options before anything runs (one message each, the CLI's exit 2). */
function validate(o: CalibrateOptions, targetFpr: number, budget: number): { modelDir: string; out: string | null } {
  if (!(targetFpr > 0 && targetFpr <= 0.5)) throw new InvalidOptionsError(`target FPR: received ${targetFpr}; allowed: a fraction above 0 and at most 0.5.`, { option: 'targetFpr' });
  if (!(budget > 0)) throw new InvalidOptionsError(`minutes: received ${budget}; allowed: a positive number of minutes.`, { option: 'minutes' });
  const modelDir = resolve(o.model ?? embeddedModelDir());
  if (o.remoteProxy) {
    if (o.out !== undefined) throw new InvalidOptionsError('--out: with a remote proxy calibrate writes edgearmor.config.json (--config chooses the file), not a model directory.', { option: 'out' });
    return { modelDir, out: null };
  }
  if (o.model === undefined && o.out === undefined) {
    throw new InvalidOptionsError("--out <dir> is required with the embedded model: the package's own directory is not written; calibrate writes a copy with the point there.", { option: 'out' });
  }
  if (!existsSync(join(modelDir, 'manifest.json'))) {
    throw new ModelLoadError(`${o.model ?? modelDir}: no manifest.json; calibrate re-pins a model directory's manifest (write one first with edgearmor manifest ${o.model ?? modelDir}).`, { model: modelDir });
  }
  const out = o.out === undefined ? null : resolve(o.out);
  if (out !== null && existsSync(out) && readdirSync(out).length > 0) throw new InvalidOptionsError(`--out ${o.out}: the directory exists and is not empty; give a new or empty directory.`, { option: 'out' });
  return { modelDir, out };
}

/** Calibrates the proxy on the traffic and writes the point; returns the report. */
export async function calibrate(options: CalibrateOptions): Promise<CalibrateReport> {
  const start = Date.now();
  const targetFpr = options.targetFpr ?? DEFAULT_CALIBRATE_TARGET_FPR;
  const budget = options.minutes ?? DEFAULT_CALIBRATE_MINUTES;
  const seed = options.seed ?? 1;
  const families = options.families ?? 'all';
  const caller = options.guardOptions ?? {};
  const progress = options.onProgress ?? (() => undefined);
  const left = (): number => Math.max(0, budget - minutesSince(start));
  const { modelDir, out } = validate(options, targetFpr, budget);
  if (resolveOptions(caller).rule !== 'causalarmor') {
    throw new InvalidOptionsError(`rule: received "${resolveOptions(caller).rule}"; calibrate places the 'causalarmor' rule's point (userWeight, tau); remove the rule option.`, { option: 'rule' });
  }

  const traffic = readPlantableTraffic(options.traffic, options.format, options.minConversations ?? MIN_ADAPT_CONVERSATIONS, 'calibration', 'ideally a few hundred');
  const python = findPython(options.python, 'plant');
  const order = shuffled(traffic.withCalls, seed);

  const { createNodeGuard } = await import('../node.js');
  const guard = createNodeGuard({
    ...caller,
    modelDir,
    ...(options.variant ? { modelVariant: options.variant } : {}),
    ...(options.remoteProxy ? { remoteProxy: options.remoteProxy } : {}),
    ...(options.chatTemplate !== undefined ? { chatTemplate: options.chatTemplate } : {}),
  });
  const work = mkdtempSync(join(tmpdir(), 'edgearmor-calibrate-'));
  try {
    const judged = judgedOptions(caller, (await guard.ready).modelOptions);
    const probe = order.slice(0, 3).map((c) => traffic.sitesOf.get(c)![0]!.input);
    const secondsPerCheck = await measureCheckSeconds(guard, probe, options.signal);
    const sized = Math.floor((left() * SCORING_SHARE * 60) / Math.max(secondsPerCheck, 0.01));
    const planted = options.cases ?? Math.max(MIN_CASES, Math.min(MAX_CASES, sized));

    const plantStart = Date.now();
    progress({ stage: 'plant', cases: planted, minutesLeft: left() });
    // Every conversation with calls is planted into; none is trained on, so traffic-train.jsonl is empty.
    writeFileSync(join(work, 'traffic-train.jsonl'), jsonl([]));
    const { cases } = await plantCases({ python, work, holdout: order, seed, families, cases: planted, threads: 1, ...(options.signal ? { signal: options.signal } : {}) }).catch((e: unknown) => {
      // Aborting stops the planter with SIGINT: the abort is the answer, not its exit status.
      options.signal?.throwIfAborted();
      throw e;
    });
    const plantMinutes = minutesSince(plantStart);

    // plant.py shuffles the cases, so the ones the budget reaches are a random sample of them.
    const scoreStart = Date.now();
    const deadline = start + budget * 60000;
    let done = 0;
    const scored = await scoreAll(guard, cases, judged, () => progress({ stage: 'score', done: ++done, total: cases.length, minutesLeft: left() }), options.signal, deadline);
    const scoreMinutes = minutesSince(scoreStart);
    const evidence = scored.map((x) => x.e);
    const injected = evidence.filter((c) => c.label === 'injected').length;
    const benign = evidence.length - injected;
    if (injected < MIN_SCORED_PER_LABEL || benign < MIN_SCORED_PER_LABEL) {
      throw new InvalidOptionsError(
        `--minutes ${budget}: the budget scored ${scored.length} of ${cases.length} planted checks (${injected} injected, ${benign} benign; at ${secondsPerCheck.toFixed(2)} s a check), too few to place a point on; give more minutes.`,
        { option: 'minutes' },
      );
    }

    const current = thresholdsOf(judged);
    const before = operatingPoint(evidence, current);
    const replayMismatches = scored.filter((x) => x.blocked !== blockedAt(x.e.evidence, current)).length;
    const choice = chooseOperatingPoint(evidence, { ...DEFAULT_CALIBRATION_SEARCH, targetFpr, preferredUserWeight: judged.userWeight, current });
    const realLogProbs = realCallLogProbs(scored);
    // Too few real calls say nothing of the agent: the threshold is then left as it was.
    const familiarityThreshold = calibratedFamiliarityThreshold(realLogProbs);
    const written: ModelOptions = { ...pointOptions(choice.chosen, choice.signals), ...(familiarityThreshold !== null ? { familiarityThreshold } : {}) };
    const realCalls = evidence.filter((c) => c.real).length;
    const calibration: ModelCalibration = { targetFpr, injected, benign, realCalls, tpr: choice.chosen.tpr, fpr: choice.chosen.fpr, rocAuc: choice.chosen.rocAuc };
    const created = new Date().toISOString();
    // A remote proxy's point goes into the caller's own config file, which is what overrides a model's file.
    const overridden = options.remoteProxy ? [] : applyModelOptions(caller, { schema: 1, options: written }).status.overridden;

    options.signal?.throwIfAborted();
    const target = options.remoteProxy
      ? { kind: 'config' as const, path: writeConfigFile(options.configFile ?? 'edgearmor.config.json', written) }
      : out !== null
        ? { kind: 'copy' as const, path: await writeModelCopy(modelDir, out, written, { source: CALIBRATE_SOURCE, created, calibration }) }
        : { kind: 'model' as const, path: await writeModelOptions(modelDir, written, { source: CALIBRATE_SOURCE, created, calibration }) };
    return {
      schema: 1,
      created,
      model: options.model === undefined ? 'embedded' : modelDir,
      remote: options.remoteProxy ? options.remoteProxy.url : null,
      traffic: {
        file: options.traffic,
        conversations: traffic.conversations.length,
        withToolCalls: traffic.withCalls.length,
        calls: [...traffic.sitesOf.values()].reduce((n, s) => n + s.length, 0),
        formats: traffic.formats,
      },
      cases: { planted: cases.length, scored: scored.length, injected, benign, realCalls },
      secondsPerCheck,
      targetFpr,
      before,
      chosen: choice.chosen,
      signals: choice.signals,
      options: written,
      familiarity: { quantile: FAMILIARITY_QUANTILE, realCalls: realLogProbs.length, threshold: familiarityThreshold },
      replayMismatches,
      overridden,
      written: target,
      minutes: { plant: plantMinutes, score: scoreMinutes, total: minutesSince(start), budget },
    };
  } finally {
    await guard.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}

/** A copy of the model directory with the options, staged beside `out` and renamed into place: never half-written. */
async function writeModelCopy(modelDir: string, out: string, written: ModelOptions, meta: Parameters<typeof writeModelOptions>[2]): Promise<string> {
  mkdirSync(dirname(out), { recursive: true });
  const stage = mkdtempSync(join(dirname(out), `.${basename(out)}.partial-`));
  try {
    cpSync(modelDir, stage, { recursive: true });
    await writeModelOptions(stage, written, meta);
    if (existsSync(out)) rmSync(out, { recursive: true });
    renameSync(stage, out);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
  return join(out, 'guard-options.json');
}

/**
 * The point merged into a CLI config file (edgearmor.config.json): every option a calibration sets is
 * replaced (an earlier point's threshold this one did not place goes, rather than mix two points), every
 * other option it holds is kept; written to a temporary file and renamed. A config file holds options
 * only, so the source and date are the report's.
 */
function writeConfigFile(path: string, written: ModelOptions): string {
  let existing: GuardOptions = {};
  if (existsSync(path)) {
    const text = readFileSync(path, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new InvalidInputError(`${path}: not valid JSON (${(e as Error).message}); fix or remove it, calibrate merges the point into it.`, { path });
    }
    if (!isPlainObject(parsed)) throw new InvalidInputError(`${path}: expected an object of guard options; fix or remove it, calibrate merges the point into it.`, { path });
    existing = structuredClone(parsed) as GuardOptions;
    for (const path of MODEL_OPTION_PATHS) deleteOptionAt(existing as Record<string, unknown>, path.split('.'));
  }
  const merged = mergeOptions(written as GuardOptions, existing);
  resolveOptions(merged);
  const stage = `${path}.partial-${process.pid}`;
  writeFileSync(stage, `${JSON.stringify(merged, null, 2)}\n`);
  renameSync(stage, path);
  return resolve(path);
}

/** Removes the option at a dotted path, and any object it leaves empty. */
function deleteOptionAt(target: Record<string, unknown>, path: readonly string[]): void {
  const [key, ...rest] = path;
  if (key === undefined || !(key in target)) return;
  if (rest.length === 0) {
    delete target[key];
    return;
  }
  const inner = target[key];
  if (!isPlainObject(inner)) return;
  deleteOptionAt(inner, rest);
  if (Object.keys(inner).length === 0) delete target[key];
}
