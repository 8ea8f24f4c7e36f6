/**
 * The big-vocabulary decoder (lab/model/make_big_vocab_fixture.py: 2 layers, hidden 32, Qwen2.5's 151,936-id
 * vocabulary, tied embeddings, hub layout without num_logits_to_keep), built once per machine into the system's
 * temporary directory, keyed by the script's hash: about 20 MB, too big to commit.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../model/make_big_vocab_fixture.py', import.meta.url));
/** The script and the weights' initialisation it shares with the tiny fixture: either changing rebuilds the fixture. */
const SOURCES = [SCRIPT, fileURLToPath(new URL('../model/make_tiny_fixture.py', import.meta.url))];
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Debian's python3 with python3-torch and python3-onnx (.ci/run installs them). */
export const PYTHON = '/usr/bin/python3';

/** The fixture's directory (with a trailing slash), built first if this machine has none for the script's current version. */
export function bigVocabFixture(): string {
  const digest = createHash('sha256');
  for (const file of SOURCES) digest.update(readFileSync(file));
  const hash = digest.digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `edgearmor-big-vocab-${hash}`);
  if (!existsSync(join(dir, 'manifest.json'))) {
    execFileSync(PYTHON, [SCRIPT, dir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp' },
    });
  }
  return `${dir}/`;
}
