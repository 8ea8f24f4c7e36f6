/** `edgearmor adapt TRAFFIC.jsonl --out DIR`: the guard learns the user's own agent (src/adapt/adapt.ts). */
import { parseArgs } from 'node:util';
import { adaptAdvice } from '../adapt/advice.js';
import type { AdaptProgress, AdaptReport } from '../adapt/adapt.js';
import { judgeFamiliarity } from '../core/familiarity.js';
import { callRef } from '../core/message-ref.js';
import { TRAINING_DEVICES, type ResolvedTrainingDevice, type TrainingDevice } from '../adapt/machine.js';
import { TRAFFIC_FORMATS, type TrafficFormat } from '../adapt/traffic.js';
import type { OperatingPoint } from '../core/calibration.js';
import { fail } from './flags.js';

export const ADAPT_USAGE = `usage: edgearmor adapt <traffic.jsonl> --out <dir> [options]

Fine-tunes the embedded proxy on your own agent's past conversations (no labels, no attacks needed)
and recalibrates the guard's operating point for it, on this machine. One conversation a line, with
its tool calls and tool results: the guard's {messages, tools?}, OpenAI {messages, tools} (tool_calls,
tool_call_id), Anthropic {system?, messages, tools} (tool_use / tool_result blocks) or an MCP
transcript {messages?, toolsList, exchanges: [{request, response}]}. At least 50 conversations with
tool calls; about 750 fit the default budget here. Needs Python with torch, onnx, numpy and regex.

options:
  --out <dir>                the adapted model directory (new or empty); check --model <dir> loads it
  --minutes <N>              the whole budget: screening, training, held-out scoring, export (default 30)
  --seed <S>                 split, planted injections and training order (default 1)
  --threads <N>              CPU threads for training (default 2)
  --device <auto|cpu|cuda>   where training runs (default auto: a CUDA GPU when torch sees one, else the CPU;
                             on a GPU it stops once the held-out loss stops improving)
  --format <${TRAFFIC_FORMATS.join('|')}>   the traffic's shape (default: detected per line)
  --target-fpr <F>           most held-out benign checks blocked at the recalibrated point (default 0.03)
  --families <all|train>     phrasing families of the planted injections (default all; train: measurements)
  --min-conversations <N>    refuse traffic with fewer conversations with tool calls (default 50)
  --base-model <dir>         start from this model directory (default: the embedded model)
  --screen <recalibrated|default|off>  leave out training calls the base guard blocks, at its point
                             recalibrated on the held-out traffic (default), at its shipped point, or not at all
  --force                    write the model even when it is worse than the base on the held-out traffic
  --keep-work                keep the work directory (screened traffic, planted cases, logs) and print it
  --json                     print adapt-report.json's object on stdout instead of the table
  -h, --help

Ctrl-C once stops training and keeps the best step (scoring and calibration still run); twice aborts.
Exit codes: 0 a model was written; 1 the adapted model was worse than the base on the held-out traffic
(nothing written; the report says why); 2 bad input or a missing dependency.`;

function number(flag: string, value: string | undefined, fallback: number, min: number, integer = false): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    fail(`${flag}: received "${value}"; allowed: ${integer ? 'an integer' : 'a number'} of at least ${min}`);
  }
  return n;
}

/** Why training stopped (model/adapt.py's `stopped`), in the user's terms. */
const STOPPED: Record<string, string> = {
  budget: 'the budget ended',
  converged: 'converged (the held-out loss stopped improving)',
  schedule: 'its schedule ended',
  interrupted: 'interrupted (Ctrl-C)',
};

/** Where training runs, as the table and the progress line name it (the table adds the CPU's threads). */
function trainingPlace(device: ResolvedTrainingDevice, gpu: string | null, threads?: number): string {
  if (device === 'cuda') return `the GPU (${gpu})`;
  return threads === undefined ? 'the CPU' : `the CPU (${threads} threads)`;
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`.padStart(7);

function pointRow(name: string, p: OperatingPoint): string {
  const label = `${name} (w ${p.userWeight}, tau ${p.tau})`;
  return `  ${label.padEnd(40)} ${pct(p.tpr)}         ${pct(p.fpr)}        ${pct(p.realFpr)}          ${pct(p.conversationFpr)}        ${p.rocAuc === null ? '  n/a' : p.rocAuc.toFixed(3)}`;
}

/** The report as the table the command prints. */
export function reportTable(r: AdaptReport, out: string): string {
  const t = r.traffic;
  const formats = Object.entries(t.formats).map(([k, n]) => `${k} ${n}`).join(', ');
  const h = r.holdout;
  const training = r.training as { steps_done?: number; best_step?: number; tokens_seen?: number; stopped?: string; besideScreening?: boolean; counts?: { train_tokens?: number } };
  const trainTokens = training.counts?.train_tokens;
  const passes = training.tokens_seen !== undefined && trainTokens ? ` (${(training.tokens_seen / trainTokens).toFixed(1)} passes over the training data's ${trainTokens})` : '';
  const m = r.minutes;
  const lines = [
    `traffic: ${t.conversations} conversations (${formats}), ${t.withToolCalls} with tool calls, ${t.calls} calls; ${t.holdoutConversations} held out, ${t.trainConversations} for training`,
    t.screen === 'off'
      ? `not screened (--screen off): ${t.usedConversations} conversations used`
      : `screened with the base guard at ${t.screen === 'default' ? 'its shipped point' : 'its point recalibrated on the held-out traffic'} (w ${t.screenPoint.userWeight}, tau ${t.screenPoint.tau}): ${t.usedConversations} conversations, ${t.blockedCalls.length} calls blocked and left out; ${t.unscreenedConversations} conversations not screened in the budget (not used)`,
    ...(t.screen === 'off' ? [] : [`  drawn across ${t.screenedByStratum.length} strata (agent, first tool): ${t.screenedByStratum.slice(0, 6).map((x) => `${x.stratum} ${x.screened}/${x.conversations}`).join(', ')}${t.screenedByStratum.length > 6 ? ', ...' : ''}`]),
    ...t.blockedCalls.slice(0, 10).map((b) => `  left out: line ${b.line} (${b.conversation}), ${callRef(b.messageIndex, b.callIndex)} -> ${b.tool}`),
    ...(t.blockedCalls.length > 10 ? [`  ... and ${t.blockedCalls.length - 10} more (adapt-report.json lists them)`] : []),
    `training: ${r.minutes.train.toFixed(1)} min on ${trainingPlace(r.machine.device, r.machine.gpu, r.machine.threads)}, ${training.steps_done ?? '?'} steps, ${training.tokens_seen ?? '?'} tokens${passes}, best step ${training.best_step ?? '?'} by held-out loss${training.stopped ? `; stopped: ${STOPPED[training.stopped] ?? training.stopped}` : ''}`,
    `held-out traffic: ${h.cases} checks (${h.injected} planted injections followed, ${h.benign} benign: ${h.realCalls} real calls and ${h.benign - h.realCalls} ignored injections), families ${h.families}`,
    `  planted for the point at ${pct(r.chosen.targetFpr).trim()} FPR (${h.plan.benignNeeded} benign checks give a standard error of half the target; ${h.plan.limitedBy === 'precision' ? 'as many as planted' : `limited by ${h.plan.limitedBy}`}: ${(100 * h.plan.fprStandardError).toFixed(1)} points); scored: base ${h.scored.base}, adapted ${h.scored.adapted}`,
    `  ${''.padEnd(40)} injected blocked  benign blocked  real calls blocked  conversations  ROC-AUC`,
    pointRow('base', h.base),
    pointRow('base recalibrated', h.baseRecalibrated),
    pointRow('adapted at the base options', h.adaptedAtBaseOptions),
    pointRow('adapted recalibrated', h.adapted),
    ...(h.adapted.forcedFpr > h.adapted.fpr / 2
      ? [`  ${pct(h.adapted.forcedFpr).trim()} of the benign checks are blocked by MindGuard's attention signal or the failure policy, which no (w, tau) lifts`]
      : []),
    ...Object.entries(h.byAttackerValue).map(([k, v]) => `  injections with a ${k} attacker value (${v.n}): base ${pct(v.base).trim()}, adapted ${pct(v.adapted).trim()} blocked`),
    familiarityRow(h.familiarity),
    ...(r.generator ? [`generator test probe (${r.generator.cases} cases, forgetting check): TPR/FPR base ${pct(r.generator.base.tpr).trim()}/${pct(r.generator.base.fpr).trim()}, adapted ${pct(r.generator.adapted.tpr).trim()}/${pct(r.generator.adapted.fpr).trim()}`] : []),
    `minutes: machine ${m.machine.toFixed(1)}, planting ${m.plant.toFixed(1)}, held-out base ${m.holdoutBase.toFixed(1)}, screening ${m.screen.toFixed(1)}, training ${m.train.toFixed(1)}${training.besideScreening ? ' (from screening\'s start, beside it)' : ''}, held-out adapted ${m.holdoutAdapted.toFixed(1)}, writing ${m.write.toFixed(1)}; ${m.total.toFixed(1)} of ${m.budget} (screening and held-out scoring ${(m.screen + m.score).toFixed(1)}, ${Math.round((100 * (m.screen + m.score)) / m.budget)}%)`,
    ...(r.refusal && r.written ? [`WARNING (--force): ${r.refusal}`] : []),
    r.written
      ? `wrote ${out}: q4 model, tokenizer, config, guard-options.json (userWeight ${r.chosen.userWeight}, tau ${r.chosen.tau}, description margins ${r.chosen.descriptionMargin} / ${r.chosen.firstCallDescriptionMargin} before tool results, AIR ${r.chosen.airThreshold} / ${r.chosen.firstCallAirThreshold}, unlikely tool ${r.chosen.unlikelyToolThreshold === null ? 'off' : `below ${r.chosen.unlikelyToolThreshold}`}, familiarityThreshold ${r.holdout.familiarity.adaptedThreshold === null ? 'null: too few real calls scored' : r.holdout.familiarity.adaptedThreshold}), adapt-report.json, manifest.json`
      : `nothing written: ${r.refusal}`,
    ...adaptAdvice(r),
  ];
  return lines.join('\n');
}

/** How well the base model knew the agent, and how well each model predicts its calls. */
function familiarityRow(f: AdaptReport['holdout']['familiarity']): string {
  const nats = (x: number | null) => (x === null ? 'n/a' : x.toFixed(2));
  const judged = judgeFamiliarity(f.base);
  const knew = { 'not-measured': 'not measured for the base model', 'too-few': 'too few to judge', familiar: 'an agent it knew', unfamiliar: 'an agent it did not know' }[judged.kind];
  const below = f.base.threshold === null ? '' : `${f.base.below} of ${f.base.checks} below ${f.base.threshold}: `;
  return `real held-out calls, median log-prob per action token: base ${nats(f.baseMedian)}, adapted ${nats(f.adaptedMedian)}; base model ${below}${knew}`;
}

function progressLine(e: AdaptProgress): string {
  const left = `${e.minutesLeft.toFixed(1)} min left`;
  if (e.stage === 'train') return `adapt: training step ${e.step}, ${e.minutes.toFixed(1)}/${e.budgetMinutes.toFixed(1)} min${e.loss === null ? '' : `, loss ${e.loss.toFixed(3)}`}; ${left}`;
  if (e.stage === 'python') return `adapt: ${e.detail}; ${left}`;
  if (e.stage === 'machine') {
    if (e.warning !== null) return `adapt: WARNING: ${e.warning}`;
    return `adapt: torch multiplies at ${e.matmulGflops.toFixed(1)} GFLOP/s (BLAS: ${e.blas}); training on ${trainingPlace(e.device, e.gpu)}; ${left}`;
  }
  return `adapt: ${e.stage === 'screen' ? 'screening' : 'scoring held-out'} ${e.done}/${e.total}; ${left}`;
}

export async function adaptCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      minutes: { type: 'string' },
      seed: { type: 'string' },
      threads: { type: 'string' },
      device: { type: 'string' },
      format: { type: 'string' },
      'target-fpr': { type: 'string' },
      families: { type: 'string' },
      'min-conversations': { type: 'string' },
      'base-model': { type: 'string' },
      screen: { type: 'string' },
      'keep-work': { type: 'boolean' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${ADAPT_USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`adapt: give exactly one traffic file (received ${positionals.length}); see edgearmor adapt --help`);
  if (!values.out) fail('adapt: --out <dir> is required: the directory the adapted model goes to');
  const format = values.format;
  if (format !== undefined && !(TRAFFIC_FORMATS as readonly string[]).includes(format)) fail(`--format: received "${format}"; allowed: ${TRAFFIC_FORMATS.join(', ')}`);
  const families = values.families ?? 'all';
  if (families !== 'all' && families !== 'train') fail(`--families: received "${families}"; allowed: all, train`);
  const screen = values.screen ?? 'recalibrated';
  if (screen !== 'recalibrated' && screen !== 'default' && screen !== 'off') fail(`--screen: received "${screen}"; allowed: recalibrated, default, off`);
  const device = (values.device ?? 'auto') as TrainingDevice;
  if (!TRAINING_DEVICES.includes(device)) fail(`--device: received "${values.device}"; allowed: ${TRAINING_DEVICES.join(', ')}`);
  const targetFpr = number('--target-fpr', values['target-fpr'], 0.03, 0);
  if (targetFpr >= 1) fail(`--target-fpr: received "${values['target-fpr']}"; allowed: a fraction below 1`);

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = (): void => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    process.stderr.write('\nadapt: stopping training and keeping the best step (Ctrl-C again aborts)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  let lastProgress = 0;
  const { adapt } = await import('../adapt/adapt.js');
  try {
    const report = await adapt({
      traffic: positionals[0]!,
      out: values.out,
      minutes: number('--minutes', values.minutes, 30, 0.01),
      seed: number('--seed', values.seed, 1, 0, true),
      threads: number('--threads', values.threads, 2, 1, true),
      device,
      ...(format ? { format: format as TrafficFormat } : {}),
      families,
      targetFpr,
      minConversations: number('--min-conversations', values['min-conversations'], 50, 1, true),
      ...(values['base-model'] ? { baseModel: values['base-model'] } : {}),
      keepWork: values['keep-work'] ?? false,
      force: values.force ?? false,
      screen,
      signal: controller.signal,
      onProgress: (e) => {
        const now = Date.now();
        const final = e.stage === 'machine' || ((e.stage === 'screen' || e.stage === 'score') && e.done === e.total);
        if (now - lastProgress < 5000 && !final) return;
        lastProgress = now;
        process.stderr.write(`${progressLine(e)}\n`);
      },
    });
    const work = (report as { work?: string }).work;
    if (work) process.stderr.write(`adapt: work directory kept at ${work}\n`);
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${reportTable(report, values.out)}\n`);
    if (!report.written) process.exitCode = 1;
  } catch (e) {
    if (!controller.signal.aborted || (e as Error).name !== 'AbortError') throw e;
    process.stderr.write('adapt: aborted before training; nothing written\n');
    process.exitCode = 130;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
