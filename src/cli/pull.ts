/**
 * `edgearmor pull REPO_ID`: fetches one variant of a hub model into a pinned model directory
 * (engine/hub-pull.ts) and prints the directory on standard output; progress goes to standard error.
 */
import { parseArgs } from 'node:util';
import type { PullProgress } from '../engine/hub-pull.js';
import { fail, variantFlag } from './flags.js';

/** The usage lines of `edgearmor pull`. */
export const PULL_USAGE = `edgearmor pull <repo id> [--revision <branch|tag|commit>] [--variant <q4|fp32|fp16|q4f16>] [--out <dir>]
  Downloads one variant of a Hugging Face Hub model in the onnx-community / transformers.js layout
  (e.g. onnx-community/Qwen2.5-0.5B-Instruct --variant q4f16): the config, tokenizer and template files
  and the variant's onnx file with its external data, each checked against the hash the hub records,
  pinned to the commit the revision points at (default main). A repository in onnxruntime-genai's layout
  (genai_config.json, model.onnx, model.onnx.data) holds one build: its files are pulled and --variant is
  not used. Prints the model directory (default <cache>/models/<org>--<name>/<commit>/<variant>, or
  .../<commit>/genai, the cache being $XDG_CACHE_HOME/edgearmor or
  ~/.cache/edgearmor). An interrupted pull resumes when run again. HF_ENDPOINT sets the hub (default
  https://huggingface.co); HF_TOKEN is sent for gated and private repositories.`;

const MB = 1e6;

/** Bytes as people read them. */
function bytesText(n: number): string {
  return n >= MB ? `${(n / MB).toFixed(1)} MB` : `${n} B`;
}

/** Standard error progress: on a terminal one line per file rewritten in place, elsewhere a line per tenth of a file. */
function progressPrinter(): (event: PullProgress) => void {
  const tty = process.stderr.isTTY === true;
  let shownTenth = -1;
  return (event) => {
    if (event.type === 'resolved') {
      const total = event.files.reduce((sum, f) => sum + f.size, 0);
      process.stderr.write(`edgearmor pull: ${event.repo} revision ${event.revision} is commit ${event.commit}; ${event.files.length} files of ${event.genai ? 'its onnxruntime-genai build' : event.variant}, ${bytesText(total)}\n`);
      return;
    }
    if (event.type !== 'file') return;
    const done = event.loadedBytes === event.totalBytes;
    const percent = event.totalBytes === 0 ? 100 : Math.floor((100 * event.loadedBytes) / event.totalBytes);
    if (event.loadedBytes === 0) shownTenth = -1;
    const tenth = Math.floor(percent / 10);
    if (!done && (tenth === shownTenth || (!tty && event.loadedBytes === 0))) return;
    shownTenth = tenth;
    const line = `edgearmor pull: [${event.index + 1}/${event.count}] ${event.file} ${bytesText(event.loadedBytes)} of ${bytesText(event.totalBytes)} (${percent}%)`;
    process.stderr.write(tty ? `\r${line}\x1b[K${done ? '\n' : ''}` : `${line}\n`);
  };
}

/** Runs `edgearmor pull` with its arguments. */
export async function pullCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { revision: { type: 'string' }, variant: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(`usage: ${PULL_USAGE}\n`);
    return;
  }
  if (positionals.length !== 1) fail(`pull takes one repo id (e.g. onnx-community/Qwen2.5-0.5B-Instruct), received ${positionals.length}; see edgearmor pull --help`);
  const variant = variantFlag(values.variant);
  const { pullModel } = await import('../engine/hub-pull.js');
  const pulled = await pullModel(positionals[0]!, {
    variant,
    ...(values.revision !== undefined ? { revision: values.revision } : {}),
    ...(values.out !== undefined ? { outDir: values.out } : {}),
    onProgress: progressPrinter(),
  });
  const how = pulled.alreadyPresent ? 'already pulled' : `${pulled.files.length} files verified against the hub's hashes and pinned in its manifest.json`;
  process.stderr.write(`edgearmor pull: ${how}; use it with: edgearmor check <cases> --model ${pulled.dir} --variant ${pulled.variant}\n`);
  process.stdout.write(`${pulled.dir}\n`);
}
