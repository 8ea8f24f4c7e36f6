/**
 * Flag parsing shared by the CLI's subcommands: one-line errors with exit status 2, and guard
 * options merged from flags, EDGEARMOR_* variables and edgearmor.config.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import { InvalidOptionsError } from '../core/errors.js';
import { isModelVariant, VARIANT_FILES, type ModelVariant } from '../engine/model-files.js';
import { validateRemoteProxyOptions, type RemoteProxyOptions } from '../engine/remote-proxy.js';
import { mergeOptions, optionsFromEnv, resolveOptions, type GuardOptions } from '../core/options.js';
import { BOOLEAN_SPELLINGS, booleanFromText } from '../core/option-sources.js';

/** Prints a one-line error and exits with status 2. */
export function fail(message: string): never {
  process.stderr.write(`edgearmor: ${message.split('\n')[0]}\n`);
  process.exit(2);
}

export function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** A boolean flag, spelled as its environment variable may be (true/false, 1/0, yes/no, on/off). */
export function bool(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  const parsed = booleanFromText(value);
  if (parsed === undefined) throw new InvalidOptionsError(`${flag}: received "${value}"; allowed: ${BOOLEAN_SPELLINGS}`, { option: flag });
  return parsed;
}

export function num(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidOptionsError(`${flag}: received "${value}"; allowed: a finite number`, { option: flag });
  return n;
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

/** The --variant flag: a model variant, q4 when absent. */
export function variantFlag(value: string | undefined): ModelVariant {
  const variant = value ?? 'q4';
  if (!isModelVariant(variant)) fail(`--variant: received "${variant}"; allowed: ${Object.keys(VARIANT_FILES).join(', ')}`);
  return variant;
}

/** The guard flags shared by check and eval. */
export const GUARD_FLAGS = {
  model: { type: 'string' },
  variant: { type: 'string' },
  config: { type: 'string' },
  tau: { type: 'string' },
  'user-weight': { type: 'string' },
  rule: { type: 'string' },
  'user-request': { type: 'string' },
  'mask-cot-for-scoring': { type: 'string' },
  'action-text': { type: 'string' },
  'on-error': { type: 'string' },
  'truncated-spans': { type: 'string' },
  'group-ablation': { type: 'string' },
  'group-margin': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'untrusted-tools': { type: 'string' },
  'trusted-tools': { type: 'string' },
  'privileged-tools': { type: 'string' },
  'remote-proxy': { type: 'string' },
  'remote-model': { type: 'string' },
  'chat-template': { type: 'string' },
} as const;

/** Help lines of the remote proxy flags, shared by the subcommands' usage texts. */
export const REMOTE_PROXY_USAGE = `  --remote-proxy <url>       score on a vLLM server (OpenAI-compatible /v1/completions) instead of
                             locally; --model then only supplies the tokenizer (default: embedded)
  --remote-model <name>      the served model name (required with --remote-proxy);
                             the API key, if any, comes from EDGEARMOR_REMOTE_API_KEY
  --chat-template <file>     render guard calls with this Jinja chat template instead of the model's`;

/** Merges flags, environment and config file into validated guard options (before any model loads). */
export function guardOptionsFrom(values: Partial<Record<keyof typeof GUARD_FLAGS, string | undefined>>): {
  options: GuardOptions;
  variant: ModelVariant;
  remoteProxy?: RemoteProxyOptions;
  chatTemplate?: string;
} {
  const variant = variantFlag(values.variant);
  const flags = {
    tau: num(values.tau, '--tau'),
    userWeight: num(values['user-weight'], '--user-weight'),
    rule: values.rule,
    userRequest: values['user-request'],
    maskCotForScoring: bool(values['mask-cot-for-scoring'], '--mask-cot-for-scoring'),
    actionText: values['action-text'],
    onError: values['on-error'],
    truncatedSpans: values['truncated-spans'],
    groupAblation: bool(values['group-ablation'], '--group-ablation'),
    groupMargin: num(values['group-margin'], '--group-margin'),
    timeoutMs: num(values['timeout-ms'], '--timeout-ms'),
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
