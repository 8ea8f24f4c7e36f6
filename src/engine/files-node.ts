/**
 * Node-only model file access: reading a model directory, and where the embedded model lives.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { access, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntegrityError, InvalidOptionsError, isEdgeArmorError, ModelLoadError } from '../core/errors.js';
import { MODEL_OPTIONS_FILE, modelOptionsFileText, type ModelCalibration, type ModelOptions } from '../core/model-options.js';
import { checkDigest, checkGrowth, onnxWithData, withManifest, type FileReader, type LocalModelFile, type ManifestEntry, type ModelManifest } from './model-files.js';

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
  /** Fetched files are kept here by SHA-256 (with a manifest); null fetches every time and keeps files in memory (at most 2 GiB each). @defaultValue defaultCacheDir() */
  cacheDir?: string | null;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** The manifest to check against, when the URL has none (hub models): it is not fetched then. */
  manifest?: ModelManifest;
}

/** The most bytes one file may have when it is kept in memory (no cache directory): Node's limit on one Buffer. */
const MAX_IN_MEMORY_BYTES = 2 ** 31 - 1;

/** A file just downloaded and verified: hashed as it was written, with the same check that it stays the version written. */
async function downloadedFile(file: string, digest: FileDigest): Promise<LocalModelFile> {
  const before = fingerprint(await stat(file));
  return { file, sha256: digest.sha256, size: digest.size, unchanged: async () => fingerprint(await stat(file)) === before };
}

/** The external data files that belong with the same graph as `dataPath` (`x.onnx_data`, `x.onnx_data_1`, `x.onnx.data`), as the manifest lists them. */
function dataSiblings(manifest: ModelManifest, dataPath: string): string[] {
  const onnxPath = dataPath.replace(/(_data(_\d+)?|\.data)$/, '');
  return onnxWithData(Object.keys(manifest.files), onnxPath).slice(1);
}

/**
 * Reads model files below a URL (a hub model's `resolve/<revision>/` URL, any static server) in
 * Node. Once the manifest is known, every file is streamed to the cache while its SHA-256 is computed,
 * and put in place under its verified name only once size and hash match (a failed, cut or altered
 * download leaves only a `.partial` file nothing reads). Graph, config and tokenizer files live in
 * `blobs/<sha256>`; external data in `external/<key>/<name>`, one folder per set of data files (the key
 * hashes their names and SHA-256s), because onnxruntime reads them by the names the graph gives from one
 * folder: they are handed over by path as `modelDir`'s are, so weights of any size load and none passes
 * through one Buffer. A cached file is hashed again on every load and fetched again when it differs.
 */
export function urlReader(baseUrl: string, options: UrlReaderOptions = {}): FileReader {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  const cacheDir = options.cacheDir === undefined ? defaultCacheDir() : options.cacheDir;
  const doFetch = options.fetch ?? globalThis.fetch;
  let manifest: ModelManifest | undefined = options.manifest;
  const fetchOk = async (path: string): Promise<Response> => {
    const url = new URL(path, base).href;
    let response: Response;
    try {
      response = await doFetch(url);
    } catch (e) {
      throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: ${(e as Error).message}`, { url, file: path });
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: HTTP ${response.status}`, { url, file: path, status: response.status });
    }
    return response;
  };
  const fetchBytes = async (path: string): Promise<Uint8Array> => {
    const response = await fetchOk(path);
    const size = Math.max(Number(response.headers.get('content-length')) || 0, manifest?.files?.[path]?.size ?? 0);
    if (size > MAX_IN_MEMORY_BYTES) {
      await response.body?.cancel().catch(() => undefined);
      throw new ModelLoadError(`model file "${path}" has ${size} bytes; without a cache directory (cacheDir: null) files are kept in memory, at most ${MAX_IN_MEMORY_BYTES} bytes each: give a cacheDir`, { file: path, size });
    }
    return new Uint8Array(await response.arrayBuffer());
  };
  /** Streams `path` into `dest`, hashing as it writes; renames it into place only when it matches `entry`. */
  const download = async (path: string, entry: ManifestEntry, dest: string): Promise<FileDigest> => {
    await mkdir(dirname(dest), { recursive: true });
    const partial = `${dest}.${process.pid}.${randomUUID().slice(0, 8)}.partial`;
    const digester = createDigester();
    const handle = await open(partial, 'w');
    let size = 0;
    try {
      const response = await fetchOk(path);
      for await (const chunk of (response.body ?? []) as unknown as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        checkGrowth(path, entry, size);
        await handle.write(chunk);
        digester.update(chunk);
      }
      await handle.close();
      const digest = digester.digest();
      checkDigest(path, entry, digest);
      await rename(partial, dest);
      return digest;
    } catch (e) {
      await handle.close().catch(() => undefined);
      await rm(partial, { force: true });
      if (isEdgeArmorError(e)) throw e;
      throw new ModelLoadError(`the download of model file "${path}" from ${new URL(path, base).href} stopped after ${size} of ${entry.size} bytes (${(e as Error).message}); nothing of it was kept`, { file: path, loadedBytes: size, totalBytes: entry.size }, { cause: e });
    }
  };
  const entryOf = (path: string): ManifestEntry | undefined => {
    const entry = manifest?.files?.[path];
    return entry && typeof entry.sha256 === 'string' && /^[0-9a-f]{64}$/.test(entry.sha256) ? entry : undefined;
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
    const entry = entryOf(path);
    if (cacheDir === null || !entry) return fetchBytes(path);
    const blob = join(cacheDir, 'blobs', entry.sha256);
    const cached = await readFile(blob).then((b) => new Uint8Array(b), () => undefined);
    if (cached && sha256(cached) === entry.sha256) return cached;
    await download(path, entry, blob);
    return new Uint8Array(await readFile(blob));
  };
  const local = async (path: string): Promise<LocalModelFile> => {
    const entry = entryOf(path);
    if (cacheDir === null || !entry || !manifest) throw new IntegrityError(`model file "${path}" is not listed in manifest.json: refusing to use an unverified file`, { file: path });
    const siblings = dataSiblings(manifest, path).map((p) => [p.slice(p.lastIndexOf('/') + 1), manifest!.files[p]!.sha256]);
    const key = sha256(new TextEncoder().encode(JSON.stringify(siblings)));
    const dest = join(cacheDir, 'external', key, path.slice(path.lastIndexOf('/') + 1));
    const cached = await localFile(dest).catch(() => undefined);
    if (cached?.sha256 === entry.sha256 && cached.size === entry.size) return cached;
    return downloadedFile(dest, await download(path, entry, dest));
  };
  const reader = cacheDir === null ? read : Object.assign(read, { local });
  return options.manifest ? withManifest(reader, options.manifest) : reader;
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
