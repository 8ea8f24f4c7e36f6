/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntegrityError, ModelLoadError } from '../core/errors.js';
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
 * One file as the Hugging Face Hub lists it (`GET /api/models/<repo>/tree/<revision>?recursive=true`):
 * `oid` is the git blob SHA-1 of the content; LFS files (the weights) also carry `lfs.oid`, the
 * content's SHA-256.
 */
export interface HubTreeEntry {
  type?: string;
  path: string;
  size?: number;
  oid?: string;
  lfs?: { oid: string; size: number };
}

/** Git's blob id of a file's content: SHA-1 of `blob <size>\0<content>`. */
export function gitBlobSha1(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.byteLength}\0`).update(bytes).digest('hex');
}

/** Checks one downloaded file against the hash the hub records for it. */
function verifyAgainstHub(path: string, bytes: Uint8Array, sha256: string, entry: HubTreeEntry | undefined): void {
  if (!entry) throw new IntegrityError(`"${path}" is not in the hub listing: refusing to pin a file the hub does not record`, { file: path });
  const [kind, expected, actual] = entry.lfs ? ['sha256', entry.lfs.oid, sha256] : ['git blob sha1', entry.oid, gitBlobSha1(bytes)];
  if (expected === undefined) throw new IntegrityError(`the hub listing has no hash for "${path}"`, { file: path });
  if (expected !== actual) {
    throw new IntegrityError(`"${path}" differs from the hub's record: ${kind} ${actual}, the hub records ${expected}; the download is corrupt or was modified, which may indicate tampering`, {
      file: path,
      expected,
      actual,
    });
  }
}

/**
 * The manifest of a model directory: SHA-256 and size of every file in it but manifest.json, in
 * sorted order (the same as model/manifest.py writes), so a downloaded model or tokenizer can be
 * pinned before EdgeArmor loads it. With `hubTree`, every file must first match the hash the hub
 * records for it (SHA-256 for LFS files, the git blob SHA-1 for the others).
 */
export async function buildManifest(dir: string, name?: string, hubTree?: readonly HubTreeEntry[]): Promise<ModelManifest & { created_by: string }> {
  const files: ModelManifest['files'] = {};
  const entries = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  const paths = entries.map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/')).filter((p) => p !== 'manifest.json').sort();
  const hub = hubTree ? new Map(hubTree.map((e) => [e.path, e])) : undefined;
  for (const path of paths) {
    const bytes = new Uint8Array(await readFile(join(dir, path)));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (hub) verifyAgainstHub(path, bytes, sha256, hub.get(path));
    files[path] = { sha256, size: bytes.byteLength };
  }
  return { files, model: name ?? basename(resolve(dir)), created_by: hubTree ? 'edgearmor manifest --hub-tree' : 'edgearmor manifest' };
}
