/**
 * `edgearmor adapt`: the guard learns the user's own agent from its attack-free traffic, on this machine
 * (docs/adapt.md).
 *
 * 1. Read and validate the traffic; split it by conversation into training and held-out parts.
 * 2. model/adapt.py plants guard cases into the held-out conversations (real calls, attacks followed and
 *    ignored); the base guard scores them, which gives its recalibrated operating point.
 * 3. Screen the training part with the base guard at that point: a blocked call is never a user-driven
 *    example, and its conversation is language-modelling data only up to it.
 * 4. model/adapt.py fine-tunes the base proxy on the traffic, attacks planted into it and a share of
 *    generated cases within the budget, and exports the best step (held-out loss) as a q4 model.
 * 5. The adapted guard scores the same held-out cases; its operating point (userWeight, tau) is chosen
 *    there, and a model worse than the base is refused.
 * 6. The model directory, its guard-options.json (pinned by the manifest) and adapt-report.json.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseGuardInput } from '../core/adapters.js';
import { tooFewHeldOut, worseThanBase } from '../core/adapt-refusal.js';
import { blockedAt, chooseOperatingPoint, DEFAULT_CALIBRATION_SEARCH, operatingPoint, pointOptions, thresholdsOf, type OperatingThresholds } from '../core/calibration.js';
import { InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { calibratedFamiliarityThreshold, countFamiliarity, emptyFamiliarity } from '../core/familiarity.js';
import { quantile } from '../core/metrics.js';
import type { Guard } from '../core/guard-api.js';
import type { ConductorGuard } from '../core/conductor.js';
import { resolveOptions } from '../core/options.js';
import { buildManifest, embeddedModelDir, writeModelOptions } from '../engine/files-node.js';
import { iterateCases } from '../scenarios/index.js';
import { HOLDOUT_TIME_SHARE, holdoutPlan, measureCheckSeconds, MIN_HOLDOUT_CASES, Pace, realCallLogProbs, scoreByConversation, scoringPlan, type ScoredCase } from './holdout.js';
import { measureTorch, slowTorchAdvice, trainingDevice } from './machine.js';
import { conversationRecord, jsonl, plantArgs, plantCases, readPlantableTraffic } from './planting.js';
import { findPython, startPython, type TrainingRun } from './python.js';
import { ScreenedHandover, screenTraffic, type Screening } from './screening.js';
import { conversationStrata, stratifiedOrder, stratumCounts } from './sampling.js';
import type { Conversation } from './traffic.js';
import { MIN_ADAPT_CONVERSATIONS, type AdaptOptions, type AdaptProgress, type AdaptReport } from './types.js';

export { findPython } from './python.js';

export type { AdaptOptions, AdaptProgress, AdaptReport, ScreenedCall } from './types.js';

const minutesSince = (t: number): number => (Date.now() - t) / 60000;

/** Held-out conversations: enough for the planted real calls, at least this many ... */
const MIN_HOLDOUT_CONVERSATIONS = 10;
/** ... and at most this share of the conversations with calls (and 150). */
const MAX_HOLDOUT_SHARE = 0.2;
/** Share of the planted cases that are real calls, each a call site used once (model/plant.py HOLDOUT_SHARES). */
const REAL_CALL_SHARE = 0.4;
/** What writing the model directory (copy, manifest, options) is given at the end of the budget. */
const WRITE_RESERVE_MINUTES = 0.05;

/** Runs an adaptation end to end and returns its report (also written to OUT/adapt-report.json when a model is written). */
export async function adapt(options: AdaptOptions): Promise<AdaptReport> {
  const start = Date.now();
  const budget = options.minutes ?? 30;
  const seed = options.seed ?? 1;
  const threads = options.threads ?? 2;
  const families = options.families ?? 'all';
  const targetFpr = options.targetFpr ?? DEFAULT_CALIBRATION_SEARCH.targetFpr;
  const minConversations = options.minConversations ?? MIN_ADAPT_CONVERSATIONS;
  const baseModel = resolve(options.baseModel ?? embeddedModelDir());
  const out = resolve(options.out);
  const progress = options.onProgress ?? (() => undefined);
  const left = (): number => Math.max(0, budget - minutesSince(start));
  if (!(budget > 0)) throw new InvalidOptionsError(`minutes: received ${budget}; allowed: a positive number of minutes.`, { option: 'minutes' });
  if (existsSync(out) && readdirSync(out).length > 0) throw new InvalidOptionsError(`--out ${options.out}: the directory exists and is not empty; give a new or empty directory.`, { option: 'out' });
  if (!existsSync(join(baseModel, 'onnx', 'model.onnx'))) {
    throw new ModelLoadError(`the base model ${baseModel} has no onnx/model.onnx (fp32), which adaptation starts from.`, { model: baseModel });
  }

  // 1. Traffic.
  const { conversations, sitesOf, withCalls, formats } = readPlantableTraffic(options.traffic, options.format, minConversations, 'adaptation', 'ideally several hundred (about 750 fit the 30-minute default here)');
  const python = findPython(options.python);
  const speed = measureTorch(python, threads);
  const machine = { ...speed, device: trainingDevice(options.device ?? 'auto', speed) };
  progress({ stage: 'machine', matmulGflops: machine.matmulGflops, blas: machine.blas, device: machine.device, gpu: machine.gpu, warning: slowTorchAdvice(machine, machine.device), minutesLeft: left() });
  const machineMinutes = minutesSince(start);
  // Drawn across the traffic (stratified by agent and first tool), so the held-out part and whatever part of the
  // training traffic screening reaches each hold every stratum at about its share.
  const strata = conversationStrata(conversations, sitesOf);
  const stratumOf = (c: Conversation): string => strata.get(c)!;
  const order = stratifiedOrder(withCalls, stratumOf, seed);

  const work = mkdtempSync(join(tmpdir(), 'edgearmor-adapt-'));
  let holdout: Conversation[] = [];
  let train: Conversation[] = [];
  const { createNodeGuard } = await import('../node.js');
  const baseOptions = resolveOptions({});
  const base = createNodeGuard({ modelDir: baseModel });
  let adapted: ConductorGuard | null = null;
  const baseThresholds = thresholdsOf(baseOptions);
  const search = { ...DEFAULT_CALIBRATION_SEARCH, targetFpr, preferredUserWeight: baseOptions.userWeight, current: baseThresholds };
  const lmOnly = conversations.filter((c) => sitesOf.get(c)!.length === 0);
  // Every training conversation, always in the same order: the held-out cases' recurring values come from all
  // of them, so model/adapt.py plants the same cases after screening as before it. One the screening budget
  // did not reach is marked unscreened (never trained on); a call the screen blocked is excluded.
  const writeTrain = (excluded: ReadonlyMap<Conversation, Array<[number, number]>>, unscreened: ReadonlySet<Conversation>): void =>
    writeFileSync(
      join(work, 'traffic-train.jsonl'),
      jsonl([...train, ...lmOnly].map((c) => ({ ...conversationRecord(c), ...(excluded.has(c) ? { excluded_calls: excluded.get(c) } : {}), ...(unscreened.has(c) ? { unscreened: true } : {}) }))),
    );
  const pythonArgs = (trainMinutes: number, holdoutCases: number, wallMinutes: number): string[] => [
    ...plantArgs({ work, seed, threads, families, cases: holdoutCases }), '--base', baseModel, '--device', machine.device, '--train-minutes', trainMinutes.toFixed(3), '--wall-minutes', wallMinutes.toFixed(3),
    ...(options.training?.maxLen ? ['--max-len', String(options.training.maxLen)] : []),
    ...(options.training?.batchTokens ? ['--batch-tokens', String(options.training.batchTokens)] : []),
  ];
  const onPython = (e: Record<string, unknown>): void => {
    if (e['event'] === 'progress') {
      progress({ stage: 'train', step: Number(e['step']), minutes: Number(e['minutes']), budgetMinutes: Number(e['budgetMinutes']), loss: typeof e['loss'] === 'number' ? e['loss'] : null, minutesLeft: left() });
    } else if (e['event'] === 'stage') progress({ stage: 'python', detail: String(e['stage']), minutesLeft: left() });
  };
  try {
    // 2. The held-out cases (planted into held-out conversations), scored by the base guard first: its
    //    recalibrated point is the one the training traffic is screened at. As many as the operating point
    //    needs (holdoutPlan), in as few conversations as hold their real calls.
    const secondsPerCheck = await measureCheckSeconds(base, order.slice(0, 3).flatMap((c) => sitesOf.get(c)!.slice(0, 1).map((s) => s.input)), options.signal);
    const plan = holdoutPlan(budget, secondsPerCheck, targetFpr);
    const holdoutCases = options.training?.holdoutCases ?? plan.cases;
    const maxHoldout = Math.min(150, Math.max(MIN_HOLDOUT_CONVERSATIONS, Math.round(MAX_HOLDOUT_SHARE * withCalls.length)));
    let realSites = 0;
    let nHoldout = 0;
    while (nHoldout < maxHoldout && (nHoldout < MIN_HOLDOUT_CONVERSATIONS || realSites < Math.ceil(REAL_CALL_SHARE * holdoutCases))) realSites += sitesOf.get(order[nHoldout++]!)!.length;
    holdout = order.slice(0, nHoldout);
    train = order.slice(nHoldout);
    writeTrain(new Map(), new Set());
    const nGenerator = options.training?.generatorCases ?? 3000;
    writeFileSync(join(work, 'generator-train.jsonl'), jsonl([...iterateCases({ split: 'train', seed: seed + 100, n: nGenerator })]));
    writeFileSync(join(work, 'generator-validation.jsonl'), jsonl([...iterateCases({ split: 'validation', seed: seed + 101, n: Math.max(20, Math.round(nGenerator / 10)) })]));
    const generatorProbe = [...iterateCases({ split: 'test', seed: seed + 102, n: options.training?.probeCases ?? 30 })].map((g) => ({ label: g.label, input: parseGuardInput(g) }));
    const plantStart = Date.now();
    const { cases, text: holdoutText } = await plantCases({ python, work, holdout, seed, families, cases: holdoutCases, threads, onEvent: onPython, ...(options.signal ? { signal: options.signal } : {}) });
    const plantMinutes = minutesSince(plantStart);
    const scoreStart = Date.now();
    let done = 0;
    const total = 2 * (cases.length + generatorProbe.length);
    const tick = (): void => progress({ stage: 'score', done: ++done, total, minutesLeft: left() });
    // Its share of the budget and half as much again (the measured time a check is a first guess); a run cut short scores whole conversations.
    const baseScored = await scoreByConversation(base, cases, baseOptions, tick, options.signal, scoreStart + 1.5 * HOLDOUT_TIME_SHARE * budget * 60000);
    const baseHoldoutMinutes = minutesSince(scoreStart);
    const baseCases = baseScored.map((x) => x.e);
    const basePoint = operatingPoint(baseCases, baseThresholds);
    const baseRecalibrated = chooseOperatingPoint(baseCases, search).chosen;
    const screenPoint = options.screen === 'default' ? basePoint : baseRecalibrated;

    // 3. Screening the training traffic within its share of the budget, a conversation's calls in one run of the
    //    model, in the stratified order; unscreened conversations are not used. A call blocked at the screening
    //    point is never a user-driven example, and its conversation is language-modelling data only up to it.
    // 4. The fine-tune: model/adapt.py gets a wall time for all of its work (data, evaluations, training, export),
    //    what is left less the adapted guard's held-out scoring (timed as the base's was) and writing the model.
    //    On the CPU it starts now and trains beside screening, on each screened conversation as it comes
    //    (screening's handover); on a GPU, whose schedule is sized to the whole data, after screening.
    const probeMinutes = (2 * generatorProbe.length * secondsPerCheck) / 60;
    const scoring = scoringPlan(budget, baseHoldoutMinutes, probeMinutes);
    const screenBudget = options.training?.screenMinutes ?? scoring.screen;
    const adaptedEstimate = 1.2 * baseHoldoutMinutes + probeMinutes;
    const interleaved = machine.device === 'cpu' && options.screen !== 'off' && options.training?.interleave !== false;
    const handover = interleaved ? new ScreenedHandover(join(work, 'screened')) : null;
    const startTraining = (): TrainingRun => {
      const pythonMinutes = left() - adaptedEstimate - WRITE_RESERVE_MINUTES;
      if (pythonMinutes < 0.05) {
        throw new InvalidOptionsError(
          `--minutes ${budget} leaves no time to train after held-out scoring and screening (${minutesSince(start).toFixed(1)} min so far, ~${adaptedEstimate.toFixed(1)} min of scoring to come); give more minutes or less traffic.`,
          { option: 'minutes' },
        );
      }
      const trainMinutes = Math.min(options.training?.trainMinutes ?? pythonMinutes, pythonMinutes);
      const args = [...pythonArgs(trainMinutes, holdoutCases, pythonMinutes), ...(handover ? ['--screened-dir', handover.dir] : [])];
      return startPython(python, args, threads, join(work, 'adapt-py.log'), onPython, options.signal);
    };
    if (handover) writeTrain(new Map(), new Set(train));
    const beside = handover ? startTraining() : null;
    const screenStart = Date.now();
    let checks = 0;
    const totalSites = train.reduce((n, c) => n + sitesOf.get(c)!.length, 0);
    const screenOptions = {
      guard: base,
      train,
      sitesOf,
      guardOptions: baseOptions,
      point: screenPoint,
      off: options.screen === 'off',
      endMs: screenStart + screenBudget * 60000,
      onCheck: () => progress({ stage: 'screen', done: ++checks, total: totalSites, minutesLeft: left() }),
    };
    let screening: Screening;
    if (beside && handover) {
      // Aborting stops screening after the conversation in flight and training at once; the best step is scored.
      try {
        screening = await screenTraffic({ ...screenOptions, onConversation: (c, blocked) => handover.add(c, blocked), stop: () => beside.failed() || options.signal?.aborted === true });
      } catch (error) {
        await beside.cancel();
        throw error;
      } finally {
        handover.finish();
      }
    } else {
      screening = await screenTraffic({ ...screenOptions, ...(options.signal ? { signal: options.signal } : {}) });
      options.signal?.throwIfAborted();
    }
    const { used, excluded, blockedCalls } = screening;
    const screenMinutes = minutesSince(screenStart);
    if (used.length === 0 && lmOnly.length === 0) {
      await beside?.cancel();
      throw new InvalidOptionsError(
        `--minutes ${budget} left screening ${screenBudget.toFixed(2)} min after held-out scoring (${baseHoldoutMinutes.toFixed(1)} min), and it reached none of the ${train.length} training conversations: nothing to train on. Give more minutes, or --screen off for traffic known to be attack-free.`,
        { option: 'minutes' },
      );
    }
    const screened = new Set(used);
    if (!beside) writeTrain(excluded, new Set(train.filter((c) => !screened.has(c))));
    const run = beside ?? startTraining();
    // Python stopped by the abort before it could keep a step (still importing): the run was aborted.
    await run.done.catch((error: unknown) => {
      options.signal?.throwIfAborted();
      throw error;
    });
    const trainWallMinutes = minutesSince(run.startedAt);
    // Aborted while training ran: training stopped and kept its best step, which is scored and written as usual.
    const scoringSignal = options.signal?.aborted ? undefined : options.signal;
    if (readFileSync(join(work, 'holdout-cases.jsonl'), 'utf8') !== holdoutText) {
      throw new ModelLoadError('model/adapt.py planted different held-out cases in training than it gave for scoring; the calibration would not describe the model (a bug: please report it).');
    }
    const training = JSON.parse(readFileSync(join(work, 'train-log.json'), 'utf8')) as Record<string, unknown>;

    // 5. The adapted guard scores the cases the base scored, up to where the scoring third ends (or the budget's
    //    end less writing, if sooner); the base and the adapted model are compared on the cases both scored, and
    //    too few of them refuse the model. Both check a probe of generated cases (forgetting).
    const adaptedStart = Date.now();
    const scoringEnd = adaptedStart + scoring.adaptedAndProbe(screenMinutes) * 60000;
    const deadline = Math.min(start + (budget - WRITE_RESERVE_MINUTES) * 60000, scoringEnd);
    const candidateDir = join(work, 'candidate');
    adapted = createNodeGuard({ modelDir: candidateDir });
    const adaptedScored = await scoreByConversation(adapted, baseScored.map((x) => x.c), baseOptions, tick, scoringSignal, deadline - probeMinutes * 60000);
    const holdoutAdaptedMinutes = minutesSince(adaptedStart);
    const generator = await probeRates(base, adapted, generatorProbe, tick, deadline, new Pace(2 * secondsPerCheck * 1000));
    const scoreMinutes = baseHoldoutMinutes + minutesSince(adaptedStart);
    const reached = new Set(adaptedScored.map((x) => x.c));
    const basePaired: ScoredCase[] = baseScored.filter((x) => reached.has(x.c));
    const cutShort = basePaired.length < baseScored.length;
    const baseCompared = cutShort ? operatingPoint(basePaired.map((x) => x.e), baseThresholds) : basePoint;
    const baseRecalibratedCompared = cutShort ? chooseOperatingPoint(basePaired.map((x) => x.e), search).chosen : baseRecalibrated;
    const adaptedCases = adaptedScored.map((x) => x.e);
    const baseRealCalls = realCallLogProbs(baseScored);
    const adaptedRealCalls = realCallLogProbs(adaptedScored);
    const replayMismatches = [...baseScored, ...adaptedScored].filter((x) => x.blocked !== blockedAt(x.e.evidence, baseThresholds)).length;
    const adaptedChoice = chooseOperatingPoint(adaptedCases, search);
    const adaptedPoint = adaptedChoice.chosen;
    const adaptedAtBaseOptions = operatingPoint(adaptedCases, baseThresholds);
    const byAttackerValue: AdaptReport['holdout']['byAttackerValue'] = {};
    for (const source of ['recurring', 'fresh']) {
      const idx = basePaired.flatMap((x, i) => (x.c.label === 'injected' && x.c.attacker_value_source === source ? [i] : []));
      if (idx.length === 0) continue;
      const at = (scored: readonly ScoredCase[], point: OperatingThresholds) => idx.filter((i) => blockedAt(scored[i]!.e.evidence, point)).length / idx.length;
      byAttackerValue[source] = { base: at(basePaired, baseCompared), adapted: at(adaptedScored, adaptedPoint), n: idx.length };
    }

    const refusal = tooFewHeldOut(basePaired.length, cases.length, MIN_HOLDOUT_CASES) ?? worseThanBase(baseCompared, adaptedPoint);
    const report: AdaptReport = {
      schema: 1,
      created: new Date().toISOString(),
      written: refusal === null || options.force === true,
      refusal,
      traffic: {
        file: options.traffic,
        conversations: conversations.length,
        withToolCalls: withCalls.length,
        calls: [...sitesOf.values()].reduce((n, s) => n + s.length, 0),
        formats,
        trainConversations: train.length,
        holdoutConversations: holdout.length,
        screen: options.screen ?? 'recalibrated',
        screenPoint: { userWeight: screenPoint.userWeight, tau: screenPoint.tau },
        usedConversations: used.length,
        unscreenedConversations: train.length - used.length,
        screenedByStratum: stratumCounts(train, screened, stratumOf).map(({ stratum, conversations: n, reached: k }) => ({ stratum, conversations: n, screened: k })),
        blockedCalls,
      },
      training: { ...pick(training, ['examples', 'tokens', 'train_tokens', 'tokens_seen', 'steps_done', 'best_step', 'stopped', 'train_minutes', 'losses', 'counts', 'evals', 'budget', 'stream', 'export_seconds', 'quantize_seconds', 'peak_rss_mb']), wallMinutes: trainWallMinutes, besideScreening: interleaved },
      holdout: {
        cases: cases.length,
        scored: { base: baseScored.length, adapted: adaptedScored.length },
        plan: { ...plan, secondsPerCheck },
        injected: cases.filter((c) => c.label === 'injected').length,
        benign: cases.filter((c) => c.label === 'benign').length,
        realCalls: adaptedCases.filter((c) => c.real).length,
        families,
        base: baseCompared,
        baseRecalibrated: baseRecalibratedCompared,
        adapted: adaptedPoint,
        adaptedAtBaseOptions,
        byAttackerValue,
        replayMismatches,
        familiarity: {
          base: baseRealCalls.reduce(countFamiliarity, emptyFamiliarity((await base.status()).familiarity.threshold)),
          baseMedian: quantile(baseRealCalls, 0.5),
          adaptedMedian: quantile(adaptedRealCalls, 0.5),
          adaptedThreshold: calibratedFamiliarityThreshold(adaptedRealCalls),
        },
      },
      generator,
      chosen: { ...thresholdsOf(resolveOptions(pointOptions(adaptedPoint, adaptedChoice.signals))), targetFpr },
      minutes: {
        machine: machineMinutes,
        plant: plantMinutes,
        holdoutBase: baseHoldoutMinutes,
        screen: screenMinutes,
        train: trainWallMinutes,
        holdoutAdapted: holdoutAdaptedMinutes,
        score: scoreMinutes,
        write: 0,
        total: minutesSince(start),
        budget,
      },
      machine,
    };
    const writeStart = Date.now();
    if (report.written) {
      mkdirSync(out, { recursive: true });
      cpSync(candidateDir, out, { recursive: true });
      writeFileSync(join(out, 'adapt-report.json'), `${JSON.stringify(report, null, 2)}\n`);
      const manifest = await buildManifest(out, `${readModelName(candidateDir)}-adapted`);
      writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
      // Validated and pinned in the manifest: the guard applies it under any option the caller sets.
      // The description margins and AIR thresholds chosen with (w, tau) where the held-out checks carried those signals.
      // The familiarity threshold as calibrate sets it, from the adapted model's own log-probabilities of the real
      // held-out calls (the base's was measured on the base's): traffic mostly below it is not the traffic the
      // point was placed on. null where too few real calls were scored to say.
      await writeModelOptions(out, { ...pointOptions(adaptedPoint, adaptedChoice.signals), familiarityThreshold: report.holdout.familiarity.adaptedThreshold }, { source: 'edgearmor adapt', created: report.created });
    }
    report.minutes.write = minutesSince(writeStart);
    report.minutes.total = minutesSince(start);
    if (options.keepWork) writeFileSync(join(work, 'adapt-report.json'), `${JSON.stringify(report, null, 2)}\n`);
    return Object.assign(report, options.keepWork ? { work } : {});
  } finally {
    await base.dispose();
    await adapted?.dispose();
    if (!options.keepWork) rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The generator probe's rates with each guard (a forgetting check): the same cases with both, one case at a
 * time with each, starting none that would, at `pace`, end past `deadlineMs`.
 */
async function probeRates(base: Guard, adapted: Guard, probe: ReadonlyArray<{ label: string; input: unknown }>, tick: () => void, deadlineMs: number, pace: Pace): Promise<NonNullable<AdaptReport['generator']>> {
  const counts = { base: { tp: 0, fp: 0 }, adapted: { tp: 0, fp: 0 } };
  let pos = 0;
  let neg = 0;
  for (const p of probe) {
    // A probe case is a check with each guard: none starts that would end past the deadline at the pace so far.
    if (!pace.fits(1, deadlineMs)) break;
    const verdicts = { base: await base.check(p.input), adapted: await adapted.check(p.input) };
    tick();
    tick();
    if (p.label === 'injected') pos++;
    else neg++;
    for (const k of ['base', 'adapted'] as const) {
      if (verdicts[k].decision !== 'block') continue;
      if (p.label === 'injected') counts[k].tp++;
      else counts[k].fp++;
    }
    pace.done(1);
  }
  const rates = (c: { tp: number; fp: number }) => ({ tpr: pos ? c.tp / pos : 0, fpr: neg ? c.fp / neg : 0 });
  return { cases: pos + neg, base: rates(counts.base), adapted: rates(counts.adapted) };
}

function readModelName(dir: string): string {
  try {
    return String((JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { model?: unknown }).model ?? 'edgearmor-proxy');
  } catch {
    return 'edgearmor-proxy';
  }
}

function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));
}

