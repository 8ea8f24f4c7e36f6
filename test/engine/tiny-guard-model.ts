/**
 * A guard model directory for tests where the model is not the point: the tiny-proxy fixture's
 * random weights (test/fixtures/tiny-proxy, fast) with the embedded model's tokenizer (same 4,096
 * vocabulary and control tokens), pinned by a fresh manifest in a temporary directory.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildManifest } from '../../src/engine/files-node.js';
import { requirement } from '../requirements.js';

const ROOT = join(import.meta.dirname, '../..');
const TINY = join(ROOT, 'test/fixtures/tiny-proxy');
const EMBEDDED = join(ROOT, 'public/models/edgearmor-proxy');

/** Whether the parts exist (the embedded model supplies the tokenizer). */
export const TINY_GUARD_MODEL_AVAILABLE = requirement(
  existsSync(join(EMBEDDED, 'tokenizer.json')) && existsSync(join(TINY, 'onnx/model_q4.onnx')),
  'the tiny guard model (test/fixtures/tiny-proxy and the embedded tokenizer)',
);

/** Builds the directory and returns its path. */
export async function makeTinyGuardModel(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-tiny-guard-'));
  mkdirSync(join(dir, 'onnx'));
  copyFileSync(join(TINY, 'config.json'), join(dir, 'config.json'));
  copyFileSync(join(TINY, 'onnx/model_q4.onnx'), join(dir, 'onnx/model_q4.onnx'));
  copyFileSync(join(EMBEDDED, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  copyFileSync(join(EMBEDDED, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(await buildManifest(dir, 'tiny-guard')));
  return dir;
}
