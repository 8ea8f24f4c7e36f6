/** CLI: writes generated guard cases as JSON lines, e.g. `npx tsx src/cli/scenarios.ts --split train --n 20000 --seed 1 --out data/train.jsonl`. */
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { iterateCases } from '../scenarios/index.js';
import type { Split } from '../scenarios/index.js';

const SPLITS: readonly string[] = ['train', 'validation', 'test'];
const USAGE = 'usage: scenarios --split train|validation|test [--n 1000] [--seed 1] [--out file.jsonl | -]';

function fail(message: string): never {
  process.stderr.write(`scenarios: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseInteger(flag: string, value: string, min: number): number {
  if (!/^-?\d+$/.test(value)) fail(`${flag} must be an integer, received "${value}"`);
  const n = Number(value);
  if (n < min) fail(`${flag} must be at least ${min}, received ${n}`);
  return n;
}

function parseArgs(argv: string[]): { split: Split; n: number; seed: number; out: string } {
  let split: string | undefined;
  let n = 1000;
  let seed = 1;
  let out = '-';
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] ?? '';
    if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    const known = ['--split', '--n', '--seed', '--out'];
    if (!known.includes(flag)) fail(`unknown flag "${flag}": should be one of ${known.join(', ')}`);
    const value = argv[i + 1];
    if (value === undefined) fail(`${flag} needs a value`);
    i++;
    if (flag === '--split') split = value;
    else if (flag === '--n') n = parseInteger('--n', value, 0);
    else if (flag === '--seed') seed = parseInteger('--seed', value, Number.MIN_SAFE_INTEGER);
    else out = value;
  }
  if (split === undefined) fail('missing --split');
  if (!SPLITS.includes(split)) fail(`unknown split "${split}": should be one of ${SPLITS.join(', ')}`);
  return { split: split as Split, n, seed, out };
}

async function main(): Promise<void> {
  // A closed pipe (`| head`) is a normal way to stop reading, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  const { split, n, seed, out } = parseArgs(process.argv.slice(2));
  if (out !== '-') mkdirSync(dirname(out), { recursive: true });
  const stream = out === '-' ? process.stdout : createWriteStream(out);
  for (const c of iterateCases({ split, seed, n })) {
    if (!stream.write(`${JSON.stringify(c)}\n`)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  }
  if (stream !== process.stdout) await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
  if (out !== '-') process.stderr.write(`wrote ${n} ${split} cases to ${out}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`scenarios: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
