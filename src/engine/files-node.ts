/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelLoadError } from '../core/errors.js';
import type { FileReader, ModelManifest } from './model-files.js';

/** The embedded default model's name. */
export const EMBEDDED_MODEL_NAME = 'edgearmor-proxy';

/** Absolute path of the embedded default model, shipped in the package under public/models/. */
export function embeddedModelDir(): string {
  // src/engine/ and dist/engine/ are both two levels below the package root.
  return resolve(fileURLToPath(new URL('../../public/models/', import.meta.url)), EMBEDDED_MODEL_NAME);
}

/** Reads model files from a local directory. */
export function directoryReader(dir: string): FileReader {
  return async (path) => {
    try {
      return new Uint8Array(await readFile(join(dir, path)));
    } catch (e) {
      throw new ModelLoadError(`cannot read model file "${path}" in ${dir}: ${(e as Error).message}`, { dir, file: path });
    }
  };
}

/**
 * The manifest of a model directory: SHA-256 and size of every file in it but manifest.json, in
 * sorted order (the same as model/manifest.py writes), so a downloaded model or tokenizer can be
 * pinned before EdgeArmor loads it.
 */
export async function buildManifest(dir: string, name?: string): Promise<ModelManifest & { created_by: string }> {
  const files: ModelManifest['files'] = {};
  const entries = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  const paths = entries.map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/')).filter((p) => p !== 'manifest.json').sort();
  for (const path of paths) {
    const bytes = await readFile(join(dir, path));
    files[path] = { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.byteLength };
  }
  return { files, model: name ?? basename(resolve(dir)), created_by: 'edgearmor manifest' };
}
