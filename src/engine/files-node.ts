/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelLoadError } from '../core/errors.js';
import type { FileReader } from './model-files.js';

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
