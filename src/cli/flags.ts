/**
 * Flag parsing shared by the CLI's subcommands: one-line errors with exit status 2, and guard
 * options merged from flags, EDGEARMOR_* variables and edgearmor.config.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { InvalidOptionsError } from '../core/errors.js';
import { RUNTIME_OPTIONS, validateRemoteProxyOptions, validateRuntimeOptions, type ModelVariant, type RemoteProxyOptions } from '../core/runtime-options.js';
import { mergeOptions, optionsFromEnv, resolveOptions, type GuardOptions } from '../core/options.js';
import { EXTERNAL_OPTIONS, optionFromText, setOptionAt, textPlaceholder } from '../core/option-sources.js';

/** Prints a one-line error and exits with status 2. */
export function fail(message: string): never {
  process.stderr.write(`edgearmor: ${message.split('\n')[0]}\n`);
  process.exit(2);
}

/**
 * `--tau -0.2` as `--tau=-0.2`: node's parseArgs takes an argument that starts with a dash for a flag and
 * refuses the pair as ambiguous, and the guard's tau is negative by default, so negative values are common.
 * Only a flag directly followed by a number literal is joined; everything else passes through unchanged.
 */
export function withNegativeNumbers(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    if (a.startsWith('--') && !a.includes('=') && next !== undefined && /^-(\d|\.\d)/.test(next) && Number.isFinite(Number(next))) {
      out.push(`${a}=${next}`);
      i++;
    } else {
      out.push(a);
    }
  }
  return out;
}

/** The --variant flag: a model variant (RUNTIME_OPTIONS.modelVariant), its default when absent. */
export function variantFlag(value: string | undefined): ModelVariant {
  if (value === undefined) return RUNTIME_OPTIONS.entries.modelVariant.defaultValue;
  try {
    return validateRuntimeOptions({ modelVariant: value }).modelVariant!;
  } catch (e) {
    return fail(`--variant: received "${value}"; allowed: ${String((e as InvalidOptionsError).details?.['allowed'])}`);
  }
}

/** The guard's options as flags, from the registry (option-registry.ts): the same names and values as EDGEARMOR_* variables. */
const OPTION_FLAGS = Object.fromEntries(EXTERNAL_OPTIONS.map((o) => [o.flag, { type: 'string' }])) as Record<string, { type: 'string' }>;

/** The guard flags shared by check and eval. */
export const GUARD_FLAGS = {
  model: { type: 'string' },
  variant: { type: 'string' },
  config: { type: 'string' },
  ...OPTION_FLAGS,
  'remote-proxy': { type: 'string' },
  'remote-model': { type: 'string' },
  'chat-template': { type: 'string' },
} as const satisfies Record<string, { type: 'string' }>;

/** The usage lines of the guard's option flags, from the registry: flag, value, summary and default. */
export function optionFlagsUsage(): string {
  return EXTERNAL_OPTIONS.map((o) => {
    const head = `  --${o.flag} <${textPlaceholder(o)}>`;
    const shown = o.leaf.meta.defaultText ?? JSON.stringify(o.leaf.defaultValue);
    return `${head.padEnd(29)}${head.length >= 29 ? '\n' + ' '.repeat(29) : ''}${o.leaf.meta.summary} (default ${shown})`;
  }).join('\n');
}

/** Help lines of the remote proxy flags, shared by the subcommands' usage texts. */
export const REMOTE_PROXY_USAGE = `  --remote-proxy <url>       score on a vLLM server (OpenAI-compatible /v1/completions) instead of
                             locally; --model then only supplies the tokenizer (default: embedded)
  --remote-model <name>      the served model name (required with --remote-proxy);
                             the API key, if any, comes from EDGEARMOR_REMOTE_API_KEY
  --chat-template <file>     render guard calls with this Jinja chat template instead of the model's`;

/** Merges flags, environment and config file into validated guard options (before any model loads). */
export function guardOptionsFrom(parsed: Readonly<Record<string, string | boolean | undefined>>): {
  options: GuardOptions;
  variant: ModelVariant;
  remoteProxy?: RemoteProxyOptions;
  chatTemplate?: string;
} {
  // The guard's flags all take a value (GUARD_FLAGS); the subcommands' own boolean flags are not read here.
  const values = Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const variant = variantFlag(values['variant']);
  const flags: Record<string, unknown> = {};
  for (const option of EXTERNAL_OPTIONS) {
    const raw = values[option.flag];
    if (raw !== undefined) setOptionAt(flags, option.path, optionFromText(option, raw, `flag --${option.flag}`));
  }
  const configPath = values.config ?? (existsSync('edgearmor.config.json') ? 'edgearmor.config.json' : undefined);
  let config: GuardOptions | undefined;
  if (configPath !== undefined) {
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8')) as GuardOptions;
    } catch (e) {
      fail(`${configPath}: ${(e as Error).message}`);
    }
  }
  const options = mergeOptions(flags as GuardOptions, optionsFromEnv(process.env), config);
  resolveOptions(options); // validates before the model loads
  let chatTemplate: string | undefined;
  if (values['chat-template'] !== undefined) {
    try {
      chatTemplate = readFileSync(values['chat-template'], 'utf8');
    } catch (e) {
      fail(`--chat-template: ${(e as Error).message}`);
    }
  }
  const template = chatTemplate !== undefined ? { chatTemplate } : {};
  const url = values['remote-proxy'];
  if (url === undefined) {
    if (values['remote-model'] !== undefined) fail('--remote-model needs --remote-proxy <url>');
    return { options, variant, ...template };
  }
  if (values['remote-model'] === undefined) fail('--remote-proxy needs --remote-model <served model name>');
  const apiKey = process.env['EDGEARMOR_REMOTE_API_KEY'];
  const remoteProxy = validateRemoteProxyOptions({ url, model: values['remote-model'], ...(apiKey ? { apiKey } : {}) });
  return { options, variant, remoteProxy, ...template };
}
