/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { access, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntegrityError, InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { MODEL_OPTIONS_FILE, modelOptionsFileText, type ModelCalibration, type ModelOptions } from '../core/model-options.js';
import { withManifest, type FileReader, type LocalModelFile, type ModelManifest } from './model-files.js';

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

/** A file's SHA-256 and size, and its git blob SHA-1 when asked for. */
export interface FileDigest {
  sha256: string;
  size: number;
  gitSha1?: string;
}

/** Digests bytes fed in pieces: SHA-256, and git's blob SHA-1 when the total size is known up front (`blob <size>\0` comes first). */
export function createDigester(gitBlobSize?: number): { update(chunk: Uint8Array): void; digest(): FileDigest } {
  const sha = createHash('sha256');
  const sha1 = gitBlobSize === undefined ? undefined : createHash('sha1').update(`blob ${gitBlobSize}\0`);
  let size = 0;
  return {
    update(chunk) {
      sha.update(chunk);
      sha1?.update(chunk);
      size += chunk.byteLength;
    },
    // A size other than the announced one makes the blob id meaningless: it then matches no record.
    digest: () => ({ sha256: sha.digest('hex'), size, ...(sha1 ? { gitSha1: size === gitBlobSize ? sha1.digest('hex') : `(${size} bytes, not ${gitBlobSize})` } : {}) }),
  };
}

/** Bytes per read when hashing a file: large reads keep a multi-GiB hash near the hash's own speed. */
const HASH_READ_BYTES = 1 << 20;

/** Feeds a file's bytes (from `start`) to `update` as a stream, in constant memory whatever its size; returns how many it read. */
export async function streamFile(path: string, update: (chunk: Uint8Array) => void, start = 0): Promise<number> {
  let read = 0;
  for await (const chunk of createReadStream(path, { start, highWaterMark: HASH_READ_BYTES }) as AsyncIterable<Buffer>) {
    update(chunk);
    read += chunk.byteLength;
  }
  return read;
}

/** A file's digest, read as a stream: files of any size (readFile stops at 2 GiB); `gitBlob` adds git's blob SHA-1. */
export async function hashFile(path: string, options: { gitBlob?: boolean } = {}): Promise<FileDigest> {
  const digester = createDigester(options.gitBlob ? (await stat(path)).size : undefined);
  await streamFile(path, (chunk) => digester.update(chunk));
  return digester.digest();
}

/** What identifies one version of a file: a replaced file has another inode, a written one another ctime. */
function fingerprint(s: Stats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
}

/** A file on disk, hashed as a stream, with a check that it is still the version hashed; throws when it changed while being hashed. */
async function localFile(file: string): Promise<LocalModelFile> {
  const before = fingerprint(await stat(file));
  const { sha256, size } = await hashFile(file);
  if (fingerprint(await stat(file)) !== before) throw new IntegrityError(`model file "${file}" changed while it was being verified, which may indicate tampering`, { file });
  return { file, sha256, size, unchanged: async () => fingerprint(await stat(file)) === before };
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

/**
 * Reads model files from a local directory; `has` lets the loader see files the manifest does not pin,
 * and `local` hashes a file where it lies, for weights handed to onnxruntime by path.
 */
export function directoryReader(dir: string): FileReader {
  const cannot = (path: string, e: unknown) => new ModelLoadError(`cannot read model file "${path}" in ${dir}: ${(e as Error).message}`, { dir, file: path });
  const read = async (path: string): Promise<Uint8Array> => {
    try {
      return new Uint8Array(await readFile(join(dir, path)));
    } catch (e) {
      throw cannot(path, e);
    }
  };
  const local = (path: string): Promise<LocalModelFile> =>
    localFile(resolve(dir, path)).catch((e: unknown) => {
      throw e instanceof IntegrityError ? e : cannot(path, e);
    });
  return Object.assign(read, { has: (path: string) => access(join(dir, path)).then(() => true, () => false), local });
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

/** Checks one downloaded file's digest (with `gitSha1` for a file the hub does not keep in LFS) against the hash the hub records for it. */
export function verifyAgainstHub(path: string, digest: FileDigest, entry: HubTreeEntry | undefined): void {
  if (!entry) throw new IntegrityError(`"${path}" is not in the hub listing: refusing to pin a file the hub does not record`, { file: path });
  const [kind, expected, actual] = entry.lfs ? ['sha256', entry.lfs.oid, digest.sha256] : ['git blob sha1', entry.oid, digest.gitSha1 ?? '(not computed)'];
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
    const entry = hub?.get(path);
    const digest = await hashFile(join(dir, path), { gitBlob: entry !== undefined && !entry.lfs });
    if (hub) verifyAgainstHub(path, digest, entry);
    files[path] = { sha256: digest.sha256, size: digest.size };
  }
  return { files, model: name ?? basename(resolve(dir)), created_by: hubTree ? 'edgearmor manifest --hub-tree' : 'edgearmor manifest' };
}

/** A manifest's file map in sorted order, as buildManifest and model/manifest.py write it. */
export function sortedFiles(files: ModelManifest['files']): ModelManifest['files'] {
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
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
  manifest.files = sortedFiles({ ...manifest.files, [MODEL_OPTIONS_FILE]: { sha256: sha256(bytes), size: bytes.byteLength } });
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return path;
}
