/**
 * `edgearmor`: the command line. `edgearmor check <file.json|file.jsonl>` prints a verdict and the
 * evidence per case. Options come from flags, then EDGEARMOR_* (or CAUSAL_ARMOR_*) variables, then
 * edgearmor.config.json, then the library's defaults.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { EdgeArmorError } from '../core/errors.js';
import { familiarityLine, judgeFamiliarity } from '../core/familiarity.js';
import { resolveOptions, type ResolvedGuardOptions } from '../core/options.js';
import { callSites, readTraffic, TRAFFIC_FORMATS, type TrafficFormat } from '../adapt/traffic.js';
import { problemLines, readCases, refuseCases, validatedInput, type CaseFileProblem, type NumberedCase } from './case-file.js';
import { fail, guardOptionsFrom, GUARD_FLAGS, optionFlagsUsage, REMOTE_PROXY_USAGE, variantFlag, withNegativeNumbers } from './flags.js';
import { verdictRecord } from '../core/verdict-record.js';
import { callRef } from '../core/message-ref.js';
import type { HubTreeEntry } from '../engine/files-node.js';
import { adaptHint, explainVerdict, modelOptionsLine, verdictTable } from './report.js';
import { PULL_USAGE } from './pull.js';

const USAGE = `usage: edgearmor check <cases.json|cases.jsonl> [options]
       edgearmor eval <cases.jsonl> [...] [options]   (see edgearmor eval --help)
       edgearmor adapt <traffic.jsonl> --out <dir> [options]   (see edgearmor adapt --help)
       edgearmor scan <tools.json> [...] [--pins <pins.json>] [--json]   (see edgearmor scan --help)
       edgearmor calibrate <traffic.jsonl> [--model <dir>] [--out <dir>] [options]   (see edgearmor calibrate --help)

Checks each guard case ({messages, action, tools?, untrusted_tools?, trusted_tools?}) with the
embedded proxy model and prints the verdict with its log-probs and normalised deltas, then on stderr
whether the proxy knows the agent (most calls predicted poorly: its verdicts are near chance there;
adapt it with edgearmor adapt).

options:
  --traffic                  the file is an agent's logged traffic, one whole conversation a line (guard,
                             OpenAI, Anthropic or MCP shape, as edgearmor adapt reads it): every tool call
                             in it is checked as the guard would have checked it before it ran
  --format <guard|openai|anthropic|mcp>   with --traffic, the traffic's shape (default: detected per line)
  --json                     one JSON object per case (JSON Lines)
  --explain                  a short plain-language reason per case (with --json: an "explanation" field)
  --exit-code                exit with status 3 when any call is blocked (for scripts; with standard output
                             closed, as with > /dev/null, the status is the only answer)
  --model <dir>              a model directory (default: the embedded model)
  --variant <q4|fp32|fp16|q4f16>  model file variant (default q4)
  --config <file>            options file (default ./edgearmor.config.json when present)
${optionFlagsUsage()}
${REMOTE_PROXY_USAGE}
  -h, --help

edgearmor serve-proxy [--port 8000] [--host 127.0.0.1] [--model <dir>] [--variant q4]
                      [--served-model-name <name>] [--allowed-origin <page origin> ...]
  Serves a model directory over the part of vLLM's API that --remote-proxy uses, so one bigger
  machine can score for many clients. EDGEARMOR_REMOTE_API_KEY, when set, is required from clients.

edgearmor manifest <dir> [--name <model name>] [--hub-tree <tree.json>]
  Writes <dir>/manifest.json (SHA-256 and size of every file) to pin a model or tokenizer directory
  you downloaded; EdgeArmor refuses any file that differs from it. With --hub-tree (the JSON of
  https://huggingface.co/api/models/<repo>/tree/<revision>?recursive=true), every file must first
  match the hash the hub records for it.

${PULL_USAGE}`;

export { readCases, type NumberedCase } from './case-file.js';

export { VERDICT_RECORD_SCHEMA_VERSION, verdictRecord, type VerdictRecord } from '../core/verdict-record.js';

export { explainVerdict, verdictTable } from './report.js';

/** `check --exit-code`: the status when any call was blocked (2 is bad usage, 1 a failure). */
const EXIT_BLOCKED = 3;

/**
 * Standard output's reader went away (EPIPE). With `check --exit-code` the exit status is the answer, so the
 * checks go on unprinted instead of ending the command with 0 (see main).
 */
const stdoutReader = { gone: false, keepChecking: false };

async function check(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: withNegativeNumbers(args),
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      traffic: { type: 'boolean' },
      format: { type: 'string' },
      explain: { type: 'boolean' },
      'exit-code': { type: 'boolean' },
      ...GUARD_FLAGS,
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`check takes one file, received ${positionals.length}; see edgearmor check --help`);
  const { options, variant, remoteProxy, chatTemplate } = guardOptionsFrom(values);
  const file = positionals[0]!;
  const format = values.format;
  if (format !== undefined && (!values.traffic || !(TRAFFIC_FORMATS as readonly string[]).includes(format))) {
    fail(values.traffic ? `--format: received "${format}"; allowed: ${TRAFFIC_FORMATS.join(', ')}` : '--format is for --traffic files only; a case file is always in the guard case shape');
  }
  let cases: NumberedCase[];
  let traffic: TrafficCheck | null = null;
  try {
    // The whole file, with the resolved options, before the model loads: no verdict is printed for a file with any bad case.
    if (values.traffic) {
      traffic = trafficCases(file, resolveOptions(options), format as TrafficFormat | undefined);
      cases = traffic.cases;
    } else cases = readCases(file, resolveOptions(options));
  } catch (e) {
    const problems = (e as EdgeArmorError).details?.['problems'];
    if (!Array.isArray(problems)) throw e;
    process.stderr.write(`${problemLines(file, problems as unknown as CaseFileProblem[]).join('\n')}\n`);
    process.exit(2);
  }

  // The engine (onnxruntime, the tokenizer) loads only after the input has been validated.
  const { createNodeGuard } = await import('../node.js');
  const guard = createNodeGuard({ ...options, ...(values.model ? { modelDir: values.model } : {}), modelVariant: variant, ...(remoteProxy ? { remoteProxy } : {}), ...(chatTemplate !== undefined ? { chatTemplate } : {}) });
  const status = await guard.ready;
  // On stderr, so --json output stays one record per line. A fallback says why (and, for a missing
  // onnxruntime-node, what to install): the checks still run, slower.
  if (status.fallbackReason) process.stderr.write(`edgearmor: ${status.backend} backend: ${status.fallbackReason}\n`);
  if (status.modelOptions) process.stderr.write(`edgearmor: ${modelOptionsLine(status.modelOptions)}\n`);
  let blocked = 0;
  let legendShown = false;
  stdoutReader.keepChecking = values['exit-code'] === true;
  for (const c of cases) {
    const verdict = await guard.check(c.input);
    if (verdict.decision === 'block') blocked += 1;
    if (stdoutReader.gone) continue;
    const record = values.json ? { ...verdictRecord(c.id, verdict), ...(values.explain ? { explanation: explainVerdict(c.input, verdict) } : {}) } : null;
    // The legend explains the table's terms once, above the first table that has them.
    const legend: boolean = !legendShown && verdict.attribution !== null;
    legendShown ||= legend;
    process.stdout.write(record ? `${JSON.stringify(record)}\n` : verdictTable(c.id, c.input, verdict, { explain: values.explain === true, legend }));
  }
  // Whether the proxy knows this agent at all (core/familiarity.ts), on stderr beside the model's options.
  const { familiarity } = await guard.status();
  if (familiarity.checks > 0) process.stderr.write(`edgearmor: ${familiarityLine(familiarity)}\n`);
  // Logged traffic of an agent it does not know: the next step, with this file.
  if (traffic && judgeFamiliarity(familiarity).kind === 'unfamiliar') process.stderr.write(`edgearmor: ${adaptHint(file, traffic.conversations, format, values.model)}\n`);
  await guard.dispose();
  if (values['exit-code'] === true && blocked > 0) process.exitCode = EXIT_BLOCKED;
}

/** A traffic file's checks, and how many of its conversations have one (what `edgearmor adapt` counts). */
interface TrafficCheck {
  cases: NumberedCase[];
  conversations: number;
}

/**
 * Every tool call of a traffic file, named by its conversation and where in it the call was made, each
 * validated as a case file's are (with the resolved options) before the model loads.
 */
function trafficCases(file: string, options: ResolvedGuardOptions, format?: TrafficFormat): TrafficCheck {
  const conversations = readTraffic(file, format);
  const sitesOf = conversations.map((conversation) => ({ conversation, sites: callSites(conversation) }));
  const problems: CaseFileProblem[] = [];
  const cases = sitesOf.flatMap(({ conversation, sites }) =>
    sites.flatMap((site) => {
      const id = `${conversation.id} ${callRef(site.messageIndex, site.callIndex)}`;
      try {
        validatedInput(site.input, options);
        return [{ id, input: site.input }];
      } catch (e) {
        problems.push({ line: conversation.line, message: `${id}: ${(e as Error).message}` });
        return [];
      }
    }),
  );
  if (problems.length === 0 && cases.length === 0) {
    problems.push({ line: null, message: `no tool call after a user message in its ${conversations.length} conversations; nothing to check (each call is checked with the messages before it, which must hold the user's request)` });
  }
  if (problems.length > 0) refuseCases(file, problems);
  return { cases, conversations: sitesOf.filter(({ sites }) => sites.length > 0).length };
}

async function writeManifest(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { name: { type: 'string' }, 'hub-tree': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`manifest takes one directory, received ${positionals.length}`);
  const dir = positionals[0]!;
  if (!existsSync(dir)) fail(`${dir}: no such directory`);
  let hubTree: HubTreeEntry[] | undefined;
  if (values['hub-tree'] !== undefined) {
    try {
      hubTree = JSON.parse(readFileSync(values['hub-tree'], 'utf8')) as HubTreeEntry[];
    } catch (e) {
      fail(`--hub-tree: ${(e as Error).message}`);
    }
    if (!Array.isArray(hubTree) || !hubTree.every((e) => typeof e?.path === 'string')) {
      fail('--hub-tree: expected the JSON array the hub returns for /api/models/<repo>/tree/<revision>?recursive=true');
    }
  }
  const { buildManifest } = await import('../engine/files-node.js');
  const manifest = await buildManifest(dir, values.name, hubTree);
  writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  process.stderr.write(`edgearmor manifest: ${Object.keys(manifest.files).length} files of ${manifest.model} pinned in ${join(dir, 'manifest.json')}\n`);
}

async function serveProxy(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      model: { type: 'string' },
      variant: { type: 'string' },
      'served-model-name': { type: 'string' },
      'allowed-origin': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const port = Number(values.port ?? 8000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port: received "${values.port}"; allowed: an integer from 0 to 65535`);
  const variant = variantFlag(values.variant);
  const { directoryReader, embeddedModelDir } = await import('../engine/files-node.js');
  const { loadModelFiles } = await import('../engine/model-files.js');
  const { startProxyServer } = await import('../engine/proxy-server.js');
  const { loadNodeEngine } = await import('../node/backends.js');
  const { engine, fallbackReason } = await loadNodeEngine(await loadModelFiles(directoryReader(values.model ?? embeddedModelDir()), variant));
  if (fallbackReason !== null) process.stderr.write(`edgearmor serve-proxy: ${engine.info.backend} instead of the preferred backend (${fallbackReason})\n`);
  const apiKey = process.env['EDGEARMOR_REMOTE_API_KEY'];
  const server = await startProxyServer({
    engine,
    port,
    host: values.host ?? '127.0.0.1',
    ...(values['served-model-name'] ? { servedModelName: values['served-model-name'] } : {}),
    ...(values['allowed-origin'] ? { allowedOrigins: values['allowed-origin'] } : {}),
    ...(apiKey ? { apiKey } : {}),
  });
  process.stderr.write(`edgearmor serve-proxy: ${server.servedModelName} (${variant}) at ${server.url}; Ctrl-C stops it\n`);
  const stop = () => void server.close().then(() => engine.dispose()).then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Runs the command line with argv (without node and script). */
export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  // `edgearmor check FILE | head -1`: a reader that went away ends the command quietly, not with an EPIPE
  // stack trace; with --exit-code the checks go on unprinted, so the status still says whether any was blocked.
  // Any other write failure (a full disk, `> /dev/full`) is one line and exit 1: the verdicts were not all
  // printed, which must not read as success.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    // A write that was already queued when the reader went away fails too; that is the same event.
    if (stdoutReader.gone) return;
    if (e.code === 'EPIPE' && stdoutReader.keepChecking) stdoutReader.gone = true;
    else if (e.code === 'EPIPE') process.exit(0);
    else {
      process.stderr.write(`edgearmor: cannot write to standard output (${e.code ?? e.message}); the output is incomplete\n`);
      process.exit(1);
    }
  });
  try {
    switch (command) {
      case 'check':
        return await check(rest);
      case 'serve-proxy':
        return await serveProxy(rest);
      case 'manifest':
        return await writeManifest(rest);
      case 'eval': {
        const { evalCommand } = await import('./eval-command.js');
        return await evalCommand(rest);
      }
      case 'adapt': {
        const { adaptCommand } = await import('./adapt.js');
        return await adaptCommand(rest);
      }
      case 'pull':
        return await (await import('./pull.js')).pullCommand(rest);
      case 'scan': {
        const { scanCommand } = await import('./scan.js');
        return await scanCommand(rest);
      }
      case 'calibrate':
        return await (await import('./calibrate.js')).calibrateCommand(rest);
      case undefined:
      case '-h':
      case '--help':
        process.stdout.write(`${USAGE}\n`);
        return;
      default:
        fail(`unknown command "${command}"; allowed: check, eval, adapt, calibrate, pull, scan, serve-proxy, manifest`);
    }
  } catch (e) {
    if (e instanceof EdgeArmorError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) fail((e as Error).message);
    throw e;
  }
}

// Run when executed directly (`tsx src/cli/edgearmor.ts ...`, the npm scripts); bin/edgearmor.js calls main itself.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) {
  await main(process.argv.slice(2));
}
