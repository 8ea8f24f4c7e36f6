/** `edgearmor calibrate TRAFFIC --model DIR`: the operating point of a proxy on the user's own agent, without training (src/adapt/calibrate.ts). */
import { parseArgs } from 'node:util';
import type { CalibrateProgress, CalibrateReport } from '../adapt/calibrate.js';
import { TRAFFIC_FORMATS, type TrafficFormat } from '../adapt/traffic.js';
import { MIN_ADAPT_CONVERSATIONS } from '../adapt/types.js';
import type { OperatingPoint } from '../core/calibration.js';
import { FAMILIARITY_MIN_CHECKS } from '../core/familiarity.js';
import { fail, guardOptionsFrom, REMOTE_PROXY_USAGE, withNegativeNumbers } from './flags.js';

export const CALIBRATE_USAGE = `usage: edgearmor calibrate <traffic.jsonl> [--model <dir>] [--out <dir>] [options]

Places the guard's operating point on your own agent without training the proxy: plants injections into
your attack-free traffic (the shapes edgearmor adapt reads, at least ${MIN_ADAPT_CONVERSATIONS} conversations with tool calls), scores
them with the proxy, and chooses userWeight, tau, the description margins, MindGuard's AIR thresholds and
the familiarity threshold at the target false-positive rate. Writes guard-options.json into the model
directory and re-pins its manifest (every later check with it uses the point and names it); with --out, a
new copy of the directory instead; with --remote-proxy, the point into edgearmor.config.json. Needs
python3 (standard library only) to plant. edgearmor adapt also trains; this does not.

options:
  --model <dir>              the model directory (default: the embedded model, which needs --out)
  --out <dir>                write a copy of the model directory with the point (new or empty)
  --target-fpr <F>           most benign checks blocked at the point, above 0 and at most 0.5 (default 0.05)
  --minutes <N>              the whole budget; the planted set is sized to it (default 10)
  --cases <N>                plant this many checks instead (scoring still stops at the budget's end)
  --format <${TRAFFIC_FORMATS.join('|')}>   the traffic's shape (default: detected per line)
  --seed <S>                 which conversations and injections are planted (default 1)
  --variant <q4|fp32|fp16|q4f16>  model file variant (default q4)
  --config <file>            options file read (default ./edgearmor.config.json when present); with
                             --remote-proxy the point is written into it
${REMOTE_PROXY_USAGE}
  --json                     print the report's object on stdout instead of the summary
  -h, --help

The numbers are in-sample: the point is chosen and measured on the same planted traffic.
Exit codes: 0 the point was written; 2 bad input or a missing dependency; 130 interrupted (nothing written).`;

function numberFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) fail(`${flag}: received "${value}"; allowed: a number`);
  return n;
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function pointLine(name: string, p: OperatingPoint): string {
  const auc = p.rocAuc === null ? 'n/a' : p.rocAuc.toFixed(3);
  return (
    `  ${name}: injected blocked ${pct(p.tpr)}, benign blocked ${pct(p.fpr)} (real calls ${pct(p.realFpr)}, conversations ${pct(p.conversationFpr)}), ROC-AUC ${auc}; ` +
    `w ${p.userWeight}, tau ${p.tau}, description margins ${p.descriptionMargin} / ${p.firstCallDescriptionMargin} (first calls), AIR ${p.airThreshold} / ${p.firstCallAirThreshold} (first calls), unlikely tool ${p.unlikelyToolThreshold === null ? 'off' : `below ${p.unlikelyToolThreshold}`}`
  );
}

/** The report as the summary the command prints. */
export function calibrateSummary(r: CalibrateReport): string {
  const formats = Object.entries(r.traffic.formats).map(([k, n]) => `${k} ${n}`).join(', ');
  const c = r.cases;
  const kept = Object.entries(r.signals).filter(([, n]) => n.benign === 0).map(([s]) => s);
  const where = { model: 'wrote', copy: 'wrote a copy of the model directory with', config: 'merged the point into' }[r.written.kind];
  return [
    `traffic: ${r.traffic.conversations} conversations (${formats}), ${r.traffic.withToolCalls} with tool calls, ${r.traffic.calls} calls`,
    `planted ${c.planted} checks, scored ${c.scored} in the budget (${r.secondsPerCheck.toFixed(2)} s a check): ${c.injected} injections followed, ${c.benign} benign (${c.realCalls} real calls, ${c.benign - c.realCalls} ignored injections)`,
    `in-sample (chosen and measured on the same planted traffic), target FPR ${r.targetFpr}:`,
    pointLine('before', r.before),
    pointLine('chosen', r.chosen),
    ...(kept.length > 0 ? [`  no benign check carried ${kept.join(', ')}: those thresholds are left as they were`] : []),
    ...(r.chosen.forcedFpr > 0 ? [`  ${pct(r.chosen.forcedFpr)} of the benign checks are blocked at any point (failure policy or the value rule)`] : []),
    r.familiarity.threshold === null
      ? `familiarity threshold: left as it was (${r.familiarity.realCalls} real calls scored, ${FAMILIARITY_MIN_CHECKS} needed)`
      : `familiarity threshold: ${r.familiarity.threshold} (the ${r.familiarity.quantile} quantile of ${r.familiarity.realCalls} real calls' log-prob per action token)`,
    ...(r.replayMismatches > 0 ? [`WARNING: ${r.replayMismatches} verdicts disagreed with their replay at the guard's own options; the rates may be off by that many checks`] : []),
    ...(r.overridden.length > 0 ? [`WARNING: your options set ${r.overridden.join(', ')}, which override the model's point in every check; remove them to use it`] : []),
    `minutes: planting ${r.minutes.plant.toFixed(1)}, scoring ${r.minutes.score.toFixed(1)}; ${r.minutes.total.toFixed(1)} of ${r.minutes.budget}`,
    `${where} ${r.written.path}${r.written.kind === 'config' ? '' : ' (manifest re-pinned)'}`,
  ].join('\n');
}

function progressLine(e: CalibrateProgress): string {
  const left = `${e.minutesLeft.toFixed(1)} min left`;
  return e.stage === 'plant' ? `calibrate: planting ${e.cases} checks; ${left}` : `calibrate: scoring ${e.done}/${e.total}; ${left}`;
}

export async function calibrateCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: withNegativeNumbers(args),
    allowPositionals: true,
    options: {
      model: { type: 'string' },
      out: { type: 'string' },
      'target-fpr': { type: 'string' },
      minutes: { type: 'string' },
      cases: { type: 'string' },
      format: { type: 'string' },
      seed: { type: 'string' },
      variant: { type: 'string' },
      config: { type: 'string' },
      'remote-proxy': { type: 'string' },
      'remote-model': { type: 'string' },
      'chat-template': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${CALIBRATE_USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`calibrate: give exactly one traffic file (received ${positionals.length}); see edgearmor calibrate --help`);
  const format = values.format;
  if (format !== undefined && !(TRAFFIC_FORMATS as readonly string[]).includes(format)) fail(`--format: received "${format}"; allowed: ${TRAFFIC_FORMATS.join(', ')}`);
  // Ranges are the library's to refuse (calibrate() says what is allowed); here only what is not a number.
  const targetFpr = numberFlag('--target-fpr', values['target-fpr']);
  const minutes = numberFlag('--minutes', values.minutes);
  const seed = numberFlag('--seed', values.seed);
  const cases = numberFlag('--cases', values.cases);
  if (cases !== undefined && (!Number.isInteger(cases) || cases < 1)) fail(`--cases: received "${values.cases}"; allowed: an integer of at least 1`);
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0)) fail(`--seed: received "${values.seed}"; allowed: an integer of at least 0`);
  const { options, variant, remoteProxy, chatTemplate } = guardOptionsFrom(values);

  const controller = new AbortController();
  const onSigint = (): void => {
    process.stderr.write('\ncalibrate: interrupted; nothing written\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  let lastProgress = 0;
  const { calibrate } = await import('../adapt/calibrate.js');
  try {
    const report = await calibrate({
      traffic: positionals[0]!,
      ...(values.model !== undefined ? { model: values.model } : {}),
      ...(values.out !== undefined ? { out: values.out } : {}),
      ...(remoteProxy ? { remoteProxy, configFile: values.config ?? 'edgearmor.config.json' } : {}),
      ...(chatTemplate !== undefined ? { chatTemplate } : {}),
      variant,
      guardOptions: options,
      ...(targetFpr !== undefined ? { targetFpr } : {}),
      ...(minutes !== undefined ? { minutes } : {}),
      ...(seed !== undefined ? { seed } : {}),
      ...(cases !== undefined ? { cases } : {}),
      ...(format ? { format: format as TrafficFormat } : {}),
      signal: controller.signal,
      onProgress: (e) => {
        const now = Date.now();
        if (now - lastProgress < 5000 && !(e.stage === 'score' && e.done === e.total)) return;
        lastProgress = now;
        process.stderr.write(`${progressLine(e)}\n`);
      },
    });
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${calibrateSummary(report)}\n`);
  } catch (e) {
    if (!controller.signal.aborted) throw e;
    process.exitCode = 130;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
