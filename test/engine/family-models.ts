/**
 * Tiny random-weight decoders with the real vocabularies of Qwen3, Gemma 3 and Llama 3 and their real
 * tokenizers (lab/model/make_family_fixture.py, onnx-community layout: onnx/model.onnx and model_q4.onnx, the
 * standard Optimum graph, which the engine's logits and attention adapters rewrite at load; or, with layout 'gqa',
 * the same weights in onnxruntime-genai's RotaryEmbedding + GroupQueryAttention layout).
 * Tens of MB each, so they are built on first use into .cache/family-fixtures/ (ignored by git), keyed by a
 * hash of the scripts that make them and the tokenizer files, and reused by later runs.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { requirement } from '../requirements.js';
import { lenmlModelsDir } from './family-fixtures.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = join(ROOT, '.cache', 'family-fixtures');
const PYTHON = process.env['EDGEARMOR_PYTHON'] ?? '/usr/bin/python3';
const SCRIPTS = ['lab/model/make_family_fixture.py', 'lab/model/make_tiny_fixture.py', 'model/proxy_model.py', 'model/export_onnx.py', 'model/quantize.py', 'model/manifest.py'];
// Building a fixture exports and quantizes a 2-layer model over up to 262k embedding rows: seconds alone, more beside other work.
const BUILD_TIMEOUT_MS = 300_000;

/**
 * The families with a tokenizer package, and the vocabulary size of their published configs (Gemma 3's
 * multimodal checkpoints: the tokenizer's image token is id 262144, past the 1B model's 262144 rows).
 */
export const FAMILY_VOCAB = { qwen3: 151_936, gemma3: 262_208, llama3: 128_256 } as const;
export type Family = keyof typeof FAMILY_VOCAB;

/** Whether the fixture builder can run here (torch and onnx in the Python that builds the project's models). */
export const CAN_BUILD_FAMILY_MODELS = requirement(
  spawnSync(PYTHON, ['-c', 'import torch, onnx'], { encoding: 'utf8', env: { ...process.env, LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp' } }).status === 0,
  `${PYTHON} with torch and onnx (to build the family fixtures)`,
);

/** A fixture's graph: the standard Optimum export, or onnxruntime-genai's GroupQueryAttention layout of the same weights. */
export type FamilyLayout = 'standard' | 'gqa';

/** The model directory of a family's fixture, built now if this version of the scripts has not built it yet. */
export function familyModelDir(family: Family, layout: FamilyLayout = 'standard'): string {
  const tokenizerDir = lenmlModelsDir(family);
  const hash = createHash('sha256');
  const scripts = layout === 'standard' ? SCRIPTS : [...SCRIPTS, 'lab/model/make_fused_fixture.py'];
  for (const f of scripts) hash.update(readFileSync(join(ROOT, f)));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) hash.update(readFileSync(join(tokenizerDir, f)));
  hash.update(String(FAMILY_VOCAB[family]));
  if (layout !== 'standard') hash.update(layout);
  // standard: qwen3-<hash>; fused: qwen3-gqa-<hash>. Old builds are recognised by exactly this shape.
  const prefix = layout === 'standard' ? `${family}-` : `${family}-${layout}-`;
  const dir = join(CACHE, `${prefix}${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(join(dir, 'manifest.json'))) return dir;
  mkdirSync(CACHE, { recursive: true });
  // Built aside and renamed into place: two test files that want the same fixture at once each build it, and
  // neither reads a half-written one.
  const building = `${dir}.building-${process.pid}`;
  const run = spawnSync(PYTHON, [join(ROOT, SCRIPTS[0]!), '--tokenizer-dir', tokenizerDir, '--vocab', String(FAMILY_VOCAB[family]), '--out', building, '--name', `tiny-${family}`, '--layout', layout], {
    encoding: 'utf8',
    timeout: BUILD_TIMEOUT_MS,
    env: { ...process.env, LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/openblas-openmp' },
  });
  if (run.status !== 0 || !existsSync(join(building, 'manifest.json'))) throw new Error(`building the ${family} fixture failed (status ${run.status}): ${run.stderr.slice(-2000)}`);
  try {
    renameSync(building, dir);
  } catch (error) {
    // The other build finished first: its copy is the same fixture.
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(join(dir, 'manifest.json'))) throw error;
  }
  // Older versions of this family's fixture are tens of MB each and no script builds them any more.
  const build = new RegExp(`^${prefix}[0-9a-f]{16}$`);
  for (const old of readdirSync(CACHE)) if (build.test(old) && join(CACHE, old) !== dir) rmSync(join(CACHE, old), { recursive: true, force: true });
  return dir;
}
