/**
 * `edgearmor`: the command line. `edgearmor check <file.json|file.jsonl>` prints a verdict and the
 * evidence per case. Options come from flags, then EDGEARMOR_* (or CAUSAL_ARMOR_*) variables, then
 * edgearmor.config.json, then the library's defaults.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseGuardInput } from '../core/adapters.js';
import { EdgeArmorError, InvalidInputError, InvalidOptionsError } from '../core/errors.js';
import { mergeOptions, optionsFromEnv, resolveOptions, type GuardOptions } from '../core/options.js';
import type { GuardInput } from '../core/types.js';
import type { ToolPoisoningVerdict } from '../core/tool-poisoning.js';
import type { Verdict } from '../core/verdict.js';

const USAGE = `usage: edgearmor check <cases.json|cases.jsonl> [options]

Checks each guard case ({messages, action, tools?, untrusted_tools?, trusted_tools?}) with the
embedded proxy model and prints the verdict with its log-probs and normalised deltas.

options:
  --json                     one JSON object per case (JSON Lines)
  --model <dir>              a model directory (default: the embedded model)
  --variant <q4|fp32>        model file variant (default q4)
  --config <file>            options file (default ./edgearmor.config.json when present)
  --tau <number>             detection margin (rule: flag span when dS > dU - tau)
  --rule <causalarmor|edgearmor>
  --user-request <all|last>
  --mask-cot-for-scoring <true|false>
  --action-text <template|raw>
  --on-error <block|allow>
  --untrusted-tools <a,b>    only these tools' results are untrusted
  --trusted-tools <a,b>      these tools' results are trusted
  --privileged-tools <a,b>   only calls of these tools are checked
  -h, --help`;

/** A case with its id for reporting. */
interface NumberedCase {
  id: string;
  input: GuardInput;
}

function fail(message: string): never {
  process.stderr.write(`edgearmor: ${message.split('\n')[0]}\n`);
  process.exit(2);
}

function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').map((s) => s.trim()).filter(Boolean);
}

function bool(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidOptionsError(`${flag}: received "${value}"; allowed: true, false`, { option: flag });
}

function num(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidOptionsError(`${flag}: received "${value}"; allowed: a finite number`, { option: flag });
  return n;
}

/** Reads guard cases from a .json (one case or an array) or .jsonl file; every case is validated. */
export function readCases(path: string): NumberedCase[] {
  if (!existsSync(path)) throw new InvalidInputError(`${path}: no such file`, { path });
  const text = readFileSync(path, 'utf8');
  const raw: Array<{ value: unknown; where: string }> = [];
  if (path.endsWith('.jsonl') || path.endsWith('.ndjson')) {
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        raw.push({ value: JSON.parse(line), where: `line ${i + 1}` });
      } catch (e) {
        throw new InvalidInputError(`${path}: line ${i + 1} is not valid JSON (${(e as Error).message})`, { path, line: i + 1 });
      }
    });
  } else {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new InvalidInputError(`${path}: not valid JSON (${(e as Error).message}); give a case, an array of cases, or a .jsonl file`, { path });
    }
    (Array.isArray(parsed) ? parsed : [parsed]).forEach((value, i) => raw.push({ value, where: Array.isArray(parsed) ? `item ${i}` : 'the case' }));
  }
  if (raw.length === 0) throw new InvalidInputError(`${path}: no cases found`, { path });
  return raw.map(({ value, where }, i) => {
    try {
      const input = parseGuardInput(value);
      const id = (value as { id?: unknown }).id;
      return { id: typeof id === 'string' || typeof id === 'number' ? String(id) : String(i + 1), input };
    } catch (e) {
      throw new InvalidInputError(`${path}: ${where}: ${(e as Error).message}`, { path });
    }
  });
}

/** The --json record of one verdict. */
export function verdictRecord(id: string, v: Verdict): Record<string, unknown> {
  const a = v.attribution;
  return {
    id,
    detected: v.detected,
    decision: v.decision,
    reason: v.reason,
    score: v.score,
    flagged: v.flagged.map((f) => ({ message_index: f.messageIndex, tool_name: f.toolName })),
    delta_user: a?.user.normalizedDelta ?? null,
    delta_spans: a?.spans.map((s) => ({ message_index: s.messageIndex, tool_name: s.toolName, delta: s.normalizedDelta, raw_delta: s.rawDelta, flagged: s.flagged })) ?? [],
    log_probs: a ? Object.fromEntries(a.variants.map((x) => [x.id, x.logProb])) : {},
    action_tokens: a?.actionTokenCount ?? null,
    rule: a?.rule ?? null,
    tau: a?.tau ?? null,
    mindguard: v.toolPoisoning ? toolPoisoningRecord(v.toolPoisoning) : null,
    backend: v.backend ?? null,
    proxy: v.proxy ?? null,
    timings: v.timings,
    ...(v.error ? { error: v.error } : {}),
  };
}

/** JSON has no Infinity: an AIR with a zero denominator is written as this cap. */
const AIR_JSON_CAP = 1e9;

function finite(n: number | null): number | null {
  return n === null ? null : Number.isFinite(n) ? n : Math.sign(n) * AIR_JSON_CAP;
}

function toolPoisoningRecord(tp: ToolPoisoningVerdict): Record<string, unknown> {
  return {
    detected: tp.detected,
    source_tool: tp.sourceTool,
    flow: tp.flow,
    air: finite(tp.air),
    score: finite(tp.score),
    leave_one_out: tp.leaveOneOut?.tools.map((t) => ({ tool: t.tool, delta: t.normalizedDelta, flagged: t.flagged })) ?? null,
    attention_detected: tp.attention?.detected ?? null,
    unavailable: tp.unavailable,
  };
}

function fmt(n: number, width: number): string {
  return (Number.isFinite(n) ? n.toFixed(3) : String(n)).padStart(width);
}

/** The human-readable table of one verdict. */
export function verdictTable(id: string, input: GuardInput, v: Verdict): string {
  const head = `case ${id}: ${v.decision.toUpperCase()} (${v.detected ? 'injection detected' : v.reason === 'model' ? 'no span drives the call' : v.reason}) -> ${input.action.name}`;
  const a = v.attribution;
  if (!a) return `${head}${v.error ? `\n  error: ${v.error.code}: ${v.error.message}` : ''}\n`;
  const rows = [`  ${'variant'.padEnd(34)}${'log P(action)'.padStart(14)}${'raw delta'.padStart(11)}${'norm delta'.padStart(12)}`];
  for (const x of a.variants) {
    let label: string = x.id;
    const span = x.kind === 'no-span' ? a.spans.find((s) => `no-span:${s.spanId}` === x.id) : undefined;
    if (x.id === 'no-user') label = 'without user request';
    if (span) label = `without ${span.toolName ?? 'tool'} result (msg ${span.messageIndex})`;
    const flag = span?.flagged ? '  FLAGGED' : '';
    rows.push(`  ${label.slice(0, 33).padEnd(34)}${fmt(x.logProb, 14)}${x.id === 'full' ? '' : fmt(x.rawDelta, 11) + fmt(x.normalizedDelta, 12)}${flag}`);
  }
  const tp = v.toolPoisoning;
  if (tp) {
    for (const t of tp.leaveOneOut?.tools ?? []) {
      rows.push(`  ${`without ${t.tool} description`.slice(0, 33).padEnd(34)}${fmt(t.logProb, 14)}${fmt(t.rawDelta, 11)}${fmt(t.normalizedDelta, 12)}${t.flagged ? '  FLAGGED' : ''}`);
    }
    const air = tp.air === null ? 'n/a' : fmt(tp.air, 0);
    rows.push(`  tool poisoning: ${tp.detected ? `DETECTED in ${tp.sourceTool} (${tp.flow} flow)` : 'none'}; MindGuard max AIR ${air}${tp.unavailable.length ? `; ${tp.unavailable.join('; ')}` : ''}`);
  }
  return `${head}\n  rule ${a.rule}, tau ${a.tau}, ${a.actionTokenCount} action tokens, ${v.backend ?? ''} ${v.proxy ?? ''}\n${rows.join('\n')}\n`;
}

async function check(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      model: { type: 'string' },
      variant: { type: 'string' },
      config: { type: 'string' },
      tau: { type: 'string' },
      rule: { type: 'string' },
      'user-request': { type: 'string' },
      'mask-cot-for-scoring': { type: 'string' },
      'action-text': { type: 'string' },
      'on-error': { type: 'string' },
      'untrusted-tools': { type: 'string' },
      'trusted-tools': { type: 'string' },
      'privileged-tools': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`check takes one file, received ${positionals.length}; see edgearmor check --help`);
  const variant = values.variant ?? 'q4';
  if (variant !== 'q4' && variant !== 'fp32') fail(`--variant: received "${variant}"; allowed: q4, fp32`);
  const flags = {
    tau: num(values.tau, '--tau'),
    rule: values.rule,
    userRequest: values['user-request'],
    maskCotForScoring: bool(values['mask-cot-for-scoring'], '--mask-cot-for-scoring'),
    actionText: values['action-text'],
    onError: values['on-error'],
    untrustedTools: list(values['untrusted-tools']),
    trustedTools: list(values['trusted-tools']),
    privilegedTools: list(values['privileged-tools']),
  } as GuardOptions;
  const configPath = values.config ?? (existsSync('edgearmor.config.json') ? 'edgearmor.config.json' : undefined);
  let config: GuardOptions | undefined;
  if (configPath !== undefined) {
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8')) as GuardOptions;
    } catch (e) {
      fail(`${configPath}: ${(e as Error).message}`);
    }
  }
  const options = mergeOptions(flags, optionsFromEnv(process.env), config);
  resolveOptions(options); // validates before the model loads
  const cases = readCases(positionals[0]!);

  // The engine (onnxruntime, transformers.js) loads only after the input has been validated.
  const { createNodeGuard } = await import('../node.js');
  const guard = createNodeGuard({ ...options, ...(values.model ? { modelDir: values.model } : {}), modelVariant: variant });
  await guard.ready;
  for (const c of cases) {
    const verdict = await guard.check(c.input);
    process.stdout.write(values.json ? `${JSON.stringify(verdictRecord(c.id, verdict))}\n` : verdictTable(c.id, c.input, verdict));
  }
  await guard.dispose();
}

/** Runs the command line with argv (without node and script). */
export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'check':
        return await check(rest);
      case undefined:
      case '-h':
      case '--help':
        process.stdout.write(`${USAGE}\n`);
        return;
      default:
        fail(`unknown command "${command}"; allowed: check`);
    }
  } catch (e) {
    if (e instanceof EdgeArmorError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) fail((e as Error).message);
    throw e;
  }
}
