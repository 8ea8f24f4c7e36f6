/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntegrityError, InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { MODEL_OPTIONS_FILE, modelOptionsFileText, type ModelCalibration, type ModelOptions } from '../core/model-options.js';
import { withManifest, type FileReader, type ModelManifest } from './model-files.js';

/** The embedded default model's name. */
export const EMBEDDED_MODEL_NAME = 'edgearmor-proxy';

/** Absolute path of the embedded default model, shipped in the package under public/models/. */
export function embeddedModelDir(): string {
  // src/engine/ and dist/engine/ are both two levels below the package root. A variable, not a literal: a
  // bundler that follows `new URL('...', import.meta.url)` (Vite) would warn about this Node-only directory.
  const packageModels = '../../public/models/';
  return resolve(fileURLToPath(new URL(packageModels, import.meta.url)), EMBEDDED_MODEL_NAME);
}

/** Hex SHA-256 of bytes, synchronously (node:crypto). */
function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Where Node keeps model files fetched from a URL: $XDG_CACHE_HOME/edgearmor, else ~/.cache/edgearmor. */
export function defaultCacheDir(): string {
  return join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'edgearmor');
}

/** Options of {@link urlReader}. */
export interface UrlReaderOptions {
  /** Fetched files are kept here by SHA-256 (with a manifest); null fetches every time. @defaultValue defaultCacheDir() */
  cacheDir?: string | null;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** The manifest to check against, when the URL has none (hub models): it is not fetched then. */
  manifest?: ModelManifest;
}

/**
 * Reads model files below a URL (a hub model's `resolve/<revision>/` URL, any static server) in
 * Node. Once the manifest is known, a file whose SHA-256 is in the cache is read from there and a
 * fetched file that matches its manifest entry is stored, so a second load needs no network; a
 * cached file that no longer matches is fetched again. model-files.ts still checks every byte.
 */
export function urlReader(baseUrl: string, options: UrlReaderOptions = {}): FileReader {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  const cacheDir = options.cacheDir === undefined ? defaultCacheDir() : options.cacheDir;
  const doFetch = options.fetch ?? globalThis.fetch;
  let manifest: ModelManifest | undefined = options.manifest;
  const fetchBytes = async (path: string): Promise<Uint8Array> => {
    const url = new URL(path, base).href;
    let response: Response;
    try {
      response = await doFetch(url);
    } catch (e) {
      throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: ${(e as Error).message}`, { url, file: path });
    }
    if (!response.ok) throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: HTTP ${response.status}`, { url, file: path, status: response.status });
    return new Uint8Array(await response.arrayBuffer());
  };
  const read: FileReader = async (path) => {
    if (path === 'manifest.json') {
      const bytes = await fetchBytes(path);
      try {
        manifest = JSON.parse(new TextDecoder().decode(bytes)) as ModelManifest;
      } catch {
        manifest = undefined; // model-files.ts reports the invalid manifest
      }
      return bytes;
    }
    const expected = manifest?.files?.[path]?.sha256;
    const blob = cacheDir !== null && typeof expected === 'string' && /^[0-9a-f]{64}$/.test(expected) ? join(cacheDir, 'blobs', expected) : undefined;
    if (blob) {
      const cached = await readFile(blob).then((b) => new Uint8Array(b), () => undefined);
      if (cached && sha256(cached) === expected) return cached;
    }
    const bytes = await fetchBytes(path);
    if (blob && sha256(bytes) === expected) {
      await mkdir(join(cacheDir!, 'blobs'), { recursive: true });
      const partial = `${blob}.${process.pid}.partial`;
      await writeFile(partial, bytes);
      await rename(partial, blob);
    }
    return bytes;
  };
  return options.manifest ? withManifest(read, options.manifest) : read;
}

/** Reads model files from a local directory; `has` lets the loader see files the manifest does not pin. */
export function directoryReader(dir: string): FileReader {
  const read = async (path: string): Promise<Uint8Array> => {
    try {
      return new Uint8Array(await readFile(join(dir, path)));
    } catch (e) {
      throw new ModelLoadError(`cannot read model file "${path}" in ${dir}: ${(e as Error).message}`, { dir, file: path });
    }
  };
  return Object.assign(read, { has: (path: string) => access(join(dir, path)).then(() => true, () => false) });
}

/** Where a Node guard's model is: a directory (the embedded model when neither is given) or a URL cached on disk; plain data. */
export interface NodeModelLocation {
  modelDir?: string | undefined;
  modelUrl?: string | undefined;
  cacheDir?: string | null | undefined;
  modelManifest?: ModelManifest | undefined;
}

/** The integrity-checked reader of a Node guard's model; throws InvalidOptionsError for a location it cannot read. */
export function nodeModelReader(o: NodeModelLocation): FileReader {
  if (o.modelUrl === undefined) {
    const dir = directoryReader(o.modelDir ?? embeddedModelDir());
    return o.modelManifest ? withManifest(dir, o.modelManifest) : dir;
  }
  if (o.modelDir !== undefined) throw new InvalidOptionsError('Invalid options: received both modelDir and modelUrl; give at most one.', { option: 'modelUrl' });
  if (!/^https?:\/\//.test(o.modelUrl)) {
    throw new InvalidOptionsError(`Invalid option modelUrl: received ${JSON.stringify(o.modelUrl)}; allowed: an absolute http(s) URL.`, { option: 'modelUrl' });
  }
  return urlReader(o.modelUrl, { ...(o.cacheDir !== undefined ? { cacheDir: o.cacheDir } : {}), ...(o.modelManifest ? { manifest: o.modelManifest } : {}) });
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
function verifyAgainstHub(path: string, bytes: Uint8Array, contentSha256: string, entry: HubTreeEntry | undefined): void {
  if (!entry) throw new IntegrityError(`"${path}" is not in the hub listing: refusing to pin a file the hub does not record`, { file: path });
  const [kind, expected, actual] = entry.lfs ? ['sha256', entry.lfs.oid, contentSha256] : ['git blob sha1', entry.oid, gitBlobSha1(bytes)];
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
    const hash = sha256(bytes);
    if (hub) verifyAgainstHub(path, bytes, hash, hub.get(path));
    files[path] = { sha256: hash, size: bytes.byteLength };
  }
  return { files, model: name ?? basename(resolve(dir)), created_by: hubTree ? 'edgearmor manifest --hub-tree' : 'edgearmor manifest' };
}

/**
 * Writes a model directory's guard-options.json (validated as the loader will) and pins it in the
 * directory's manifest.json, leaving every other entry as it is; returns the file's path.
 */
export async function writeModelOptions(dir: string, options: ModelOptions, meta: { source: string; created?: string; calibration?: ModelCalibration }): Promise<string> {
  const manifestPath = join(dir, 'manifest.json');
  let manifest: ModelManifest & Record<string, unknown>;
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as ModelManifest & Record<string, unknown>;
  } catch (e) {
    throw new ModelLoadError(`cannot pin ${MODEL_OPTIONS_FILE}: ${manifestPath} is missing or not JSON (${(e as Error).message})`, { dir, file: 'manifest.json' });
  }
  const bytes = new TextEncoder().encode(modelOptionsFileText(options, meta));
  const path = join(dir, MODEL_OPTIONS_FILE);
  await writeFile(path, bytes);
  const files = { ...manifest.files, [MODEL_OPTIONS_FILE]: { sha256: sha256(bytes), size: bytes.byteLength } };
  // Sorted, as buildManifest writes it.
  manifest.files = Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return path;
}
