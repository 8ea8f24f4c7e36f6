/**
 * Model files: the manifest, SHA-256 integrity checks, and the parsed files the engine needs.
 *
 * Every byte is checked against the model's manifest.json before it is used: a tampered or
 * truncated file refuses to load. Reading bytes is the caller's (a Node directory reader, or the
 * browser's fetch + Cache Storage), so this module runs in both.
 */
import { IntegrityError, InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { MODEL_OPTIONS_FILE, parseModelOptionsFile, type ModelOptionsFile } from '../core/model-options.js';
import type { ModelManifest, ModelVariant } from '../core/runtime-options.js';
import { configFromGenai } from './model-config.js';
import { genaiOnnxFile, graphVariant } from './genai-layout.js';
import { createSha256 } from '../core/sha256.js';

export type { ModelManifest, ModelVariant } from '../core/runtime-options.js';

/**
 * Reads one file of a model by its path relative to the model directory. A reader that can tell cheaply
 * whether a file is there (a local directory) has `has`: the loader then refuses a guard-options.json the
 * manifest does not pin. A URL reader has none: it only ever fetches files the manifest lists. A reader of
 * files on this machine (Node) has `local`: external data files are then hashed as streams and handed to
 * onnxruntime by path, never read into memory, so weights of any size load. A reader over the network
 * without a disk (the browser) has `streamed`: external data is hashed while it arrives and handed to
 * onnxruntime as a Blob, never gathered into one buffer by EdgeArmor.
 */
export type FileReader = ((relativePath: string) => Promise<Uint8Array>) & {
  has?: (relativePath: string) => Promise<boolean>;
  local?: (relativePath: string) => Promise<LocalModelFile>;
  streamed?: (relativePath: string, check: StreamCheck) => Promise<Blob>;
};

/** One file's entry in a manifest. */
export type ManifestEntry = ModelManifest['files'][string];

/**
 * Checks a file's bytes as they arrive, for {@link FileReader.streamed}: `update` throws an IntegrityError
 * as soon as more bytes arrive than the manifest lists, `end` when the size or SHA-256 differs. A reader
 * must call `end` (and let it pass) before it keeps or returns the bytes.
 */
export interface StreamCheck {
  update(chunk: Uint8Array): void;
  end(): void;
  /** A new check of the same file from its first byte, for a second attempt (a damaged cached copy fetched again). */
  fresh(): StreamCheck;
  /** Whether `end` passed, on this check or on one `fresh` made from it. */
  readonly passed: boolean;
}

/** A model file on this machine, hashed where it lies (files-node.ts `directoryReader`). */
export interface LocalModelFile {
  /** Its absolute path. */
  file: string;
  sha256: string;
  size: number;
  /** Whether the file is still the one that was hashed (same inode, size, mtime and ctime): checked after onnxruntime has read it. */
  unchanged(): Promise<boolean>;
}

/** An external data file of the onnx file, by the name the graph uses: its bytes, (Node) the verified file on disk, or (browser) its verified bytes as a Blob. */
export type ExternalDataFile = { path: string; data: Uint8Array } | { path: string; local: LocalModelFile } | { path: string; blob: Blob };

/** onnxruntime-genai's model builder: the config it writes beside model.onnx (and model.onnx.data), in place of config.json. */
export const GENAI_CONFIG_FILE = 'genai_config.json';

/** A model's chat template in a file of its own (as newer transformers versions save it), read when the manifest pins it. */
export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';

/** onnx file of each variant, in the transformers.js / onnx-community layout. */
export const VARIANT_FILES: Readonly<Record<ModelVariant, string>> = Object.freeze({
  fp32: 'onnx/model.onnx',
  q4: 'onnx/model_q4.onnx',
  fp16: 'onnx/model_fp16.onnx',
  q4f16: 'onnx/model_q4f16.onnx',
});

/** Whether `value` names a model variant. */
export function isModelVariant(value: unknown): value is ModelVariant {
  return typeof value === 'string' && Object.hasOwn(VARIANT_FILES, value);
}

/** Whether a variant's activations, KV cache and logits are float16. */
export function isFloat16Variant(variant: ModelVariant): boolean {
  return variant === 'fp16' || variant === 'q4f16';
}

/** The loaded, verified files of a model. */
export interface ModelFiles {
  manifest: ModelManifest;
  config: Record<string, unknown>;
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** The model's own operating point (guard-options.json), or null when the model has none. */
  modelOptions: ModelOptionsFile | null;
  onnx: Uint8Array;
  /** The onnx file's path in the model directory (`onnx/model_q4.onnx`; `model.onnx` in onnxruntime-genai's layout). */
  onnxPath: string;
  /** The onnx file's external data files (`model.onnx_data`, `model.onnx_data_1`...), by the name the graph uses. */
  externalData: ExternalDataFile[];
  /** The variant loaded: the one asked for, or in onnxruntime-genai's layout (one build per directory) the build's own, read from its graph. */
  variant: ModelVariant;
}

/** Hex SHA-256 of bytes (WebCrypto: in browsers, workers and Node 20). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Checks bytes against the manifest entry of `path`; throws IntegrityError on any difference. */
export async function verifyFile(manifest: ModelManifest, path: string, bytes: Uint8Array): Promise<void> {
  await verifyDigest(manifest, path, bytes.byteLength, () => sha256Hex(bytes));
}

/** Checks a file's size and SHA-256 (computed only when the size matches) against the manifest entry of `path`. */
async function verifyDigest(manifest: ModelManifest, path: string, size: number, sha256: () => Promise<string> | string): Promise<void> {
  const entry = listedEntry(manifest, path);
  checkSize(path, entry, size);
  checkSha256(path, entry, await sha256());
}

/** The manifest entry of `path`; an IntegrityError when the manifest does not list it. */
function listedEntry(manifest: ModelManifest, path: string): ManifestEntry {
  const entry = manifest.files[path];
  if (!entry) {
    throw new IntegrityError(`model file "${path}" is not listed in manifest.json: refusing to use an unverified file`, {
      file: path,
    });
  }
  return entry;
}

function checkSize(path: string, entry: ManifestEntry, size: number): void {
  if (size !== entry.size) {
    throw new IntegrityError(
      `model file "${path}" has ${size} bytes, the manifest says ${entry.size}: the file is truncated or was modified, which may indicate tampering`,
      { file: path, expectedSize: entry.size, actualSize: size },
    );
  }
}

/** Throws the IntegrityError of a file whose size or SHA-256 is not its manifest entry's, for readers that hash while they download. */
export function checkDigest(path: string, entry: ManifestEntry, digest: { size: number; sha256: string }): void {
  checkSize(path, entry, digest.size);
  checkSha256(path, entry, digest.sha256);
}

/** Throws the IntegrityError of a file whose SHA-256 is not its manifest entry's. */
function checkSha256(path: string, entry: ManifestEntry, actual: string): void {
  if (actual !== entry.sha256) {
    throw new IntegrityError(`model file hash mismatch for "${path}": expected sha256 ${entry.sha256}, got ${actual}; this may indicate tampering`, {
      file: path,
      expected: entry.sha256,
      actual,
    });
  }
}

/** Throws once a download has brought more bytes than the file has: a server sending too much is stopped as soon as it does, not after it has filled the memory or the disk. */
export function checkGrowth(path: string, entry: ManifestEntry, bytesSoFar: number): void {
  if (bytesSoFar > entry.size) checkSize(path, entry, bytesSoFar);
}

/** A {@link StreamCheck} of `path` against its manifest entry: SHA-256 computed piece by piece as the bytes stream. */
export function streamCheck(path: string, entry: ManifestEntry, outcome: { passed: boolean } = { passed: false }): StreamCheck {
  const sha = createSha256();
  return {
    update(chunk) {
      checkGrowth(path, entry, sha.length + chunk.byteLength);
      sha.update(chunk);
    },
    end() {
      checkSize(path, entry, sha.length);
      checkSha256(path, entry, sha.hex());
      outcome.passed = true;
    },
    fresh: () => streamCheck(path, entry, outcome),
    get passed() {
      return outcome.passed;
    },
  };
}

function parseJson(path: string, bytes: Uint8Array): Record<string, unknown> {
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    // Dev servers and single-page apps answer a path they do not have with their index.html.
    if (/^\s*</.test(text)) {
      throw new ModelLoadError(`model file "${path}" is an HTML page, not JSON: the server has no such file there and answered with a page instead; check modelUrl (or modelDir)`, { file: path });
    }
    throw new ModelLoadError(`model file "${path}" is not valid JSON: ${(e as Error).message}`, { file: path });
  }
}

/** The verified files a model's tokenizer and chat format need: everything but the weights. */
export type TokenizerModelFiles = Omit<ModelFiles, 'onnx' | 'onnxPath' | 'externalData' | 'variant'>;

/**
 * An onnx file and, of `paths` (a manifest's or a hub listing's), its external data files: the exporters'
 * `model.onnx_data`, `model.onnx_data_1`... (transformers.js, Optimum) and onnxruntime-genai's `model.onnx.data`.
 */
export function onnxWithData(paths: readonly string[], onnxPath: string): string[] {
  return [onnxPath, ...paths.filter((p) => p === `${onnxPath}_data` || p.startsWith(`${onnxPath}_data_`) || p === `${onnxPath}.data`).sort()];
}

/** The onnx file of `variant` and, of `paths` (a manifest's or a hub listing's), its external data files. */
export function variantWeightPaths(paths: readonly string[], variant: ModelVariant): string[] {
  return onnxWithData(paths, VARIANT_FILES[variant]);
}

/** Whether a manifest (or listing) is onnxruntime-genai's layout: genai_config.json and no onnx/ file of the variant asked for. */
export function isGenaiLayout(paths: readonly string[], variant: ModelVariant): boolean {
  return paths.includes(GENAI_CONFIG_FILE) && !paths.includes(VARIANT_FILES[variant]);
}

/** Where a variant's weights are in a manifest: the onnx file and its external data files. */
interface WeightLayout {
  onnxPath: string;
  dataPaths: string[];
  /** Whether it is onnxruntime-genai's layout (the variant then comes from the graph). */
  genai: boolean;
}

/** Every file a guard reads from a model directory for `variant` (what a build ships), manifest.json first. */
export function filesForVariant(manifest: ModelManifest, variant: ModelVariant): string[] {
  const paths = Object.keys(manifest.files);
  // Which graph a genai directory holds is in its genai_config.json, which this synchronous listing does not read: every .onnx file beside it and its data.
  const weights = isGenaiLayout(paths, variant)
    ? paths.filter((p) => /^[^/]+\.onnx$/.test(p)).flatMap((p) => onnxWithData(paths, p))
    : variantWeightPaths(paths, variant);
  const listed = ['config.json', GENAI_CONFIG_FILE, 'tokenizer.json', 'tokenizer_config.json', CHAT_TEMPLATE_FILE, MODEL_OPTIONS_FILE].filter((f) => manifest.files[f] !== undefined);
  return ['manifest.json', ...listed, ...weights.filter((f) => manifest.files[f] !== undefined)];
}

/** Reads, verifies and parses the files of a model; `onFile` reports each verified file. */
export async function loadModelFiles(
  read: FileReader,
  variant: ModelVariant,
  onFile?: (path: string, bytes: number) => void,
): Promise<ModelFiles> {
  if (!isModelVariant(variant)) {
    throw new InvalidOptionsError(`Invalid option modelVariant: received ${JSON.stringify(variant)}; allowed: ${Object.keys(VARIANT_FILES).join(', ')}.`, { option: 'modelVariant' });
  }
  const { manifest, get, getLocal, getStreamed } = await openManifest(read, onFile);
  const layout = await weightLayout(manifest, variant, get);
  // The graph file is read (the attention adapter rewrites it; protobuf keeps it under 2 GiB); its external
  // data stays where the reader has it: on disk (Node), or in a Blob built as it streamed (browser).
  const [base, onnx, ...externalData] = await Promise.all([
    readTokenizerFiles(manifest, get, read),
    get(layout.onnxPath),
    ...layout.dataPaths.map(async (p): Promise<ExternalDataFile> => {
      const path = p.slice(p.lastIndexOf('/') + 1);
      if (getLocal) return { path, local: await getLocal(p) };
      if (getStreamed) return { path, blob: await getStreamed(p) };
      return { path, data: await get(p) };
    }),
  ]);
  return { ...base, onnx, onnxPath: layout.onnxPath, externalData, variant: layout.genai ? graphVariant(onnx) : variant };
}

/** The onnx file and external data files of `variant` in the manifest: the onnx-community layout, else onnxruntime-genai's. */
async function weightLayout(manifest: ModelManifest, variant: ModelVariant, get: (path: string) => Promise<Uint8Array>): Promise<WeightLayout> {
  const paths = Object.keys(manifest.files);
  if (isGenaiLayout(paths, variant)) {
    const onnxPath = genaiOnnxFile(parseJson(GENAI_CONFIG_FILE, await get(GENAI_CONFIG_FILE)));
    if (!manifest.files[onnxPath]) {
      throw new ModelLoadError(`${GENAI_CONFIG_FILE} names the graph "${onnxPath}", which the manifest does not list; onnxruntime-genai's layout keeps it beside ${GENAI_CONFIG_FILE}`, { file: onnxPath });
    }
    return { onnxPath, dataPaths: onnxWithData(paths, onnxPath).slice(1), genai: true };
  }
  const onnxPath = VARIANT_FILES[variant];
  if (!manifest.files[onnxPath]) {
    const has = (Object.keys(VARIANT_FILES) as ModelVariant[]).filter((v) => manifest.files[VARIANT_FILES[v]]);
    const name = typeof manifest.model === 'string' ? `model "${manifest.model}"` : 'the model (its manifest names none)';
    throw new ModelLoadError(`${name} has no ${variant} variant (${onnxPath} is not in its manifest); it has: ${has.join(', ') || 'none'}`, { variant, file: onnxPath });
  }
  return { onnxPath, dataPaths: variantWeightPaths(paths, variant).slice(1), genai: false };
}

/**
 * Reads and verifies a model's manifest, config and tokenizer files without its weights: what a
 * remote proxy needs to render and tokenise locally.
 */
export async function loadTokenizerFiles(read: FileReader, onFile?: (path: string, bytes: number) => void): Promise<TokenizerModelFiles> {
  const { manifest, get } = await openManifest(read, onFile);
  return readTokenizerFiles(manifest, get, read);
}

async function openManifest(
  read: FileReader,
  onFile: ((path: string, bytes: number) => void) | undefined,
): Promise<{
  manifest: ModelManifest;
  get: (path: string) => Promise<Uint8Array>;
  getLocal: ((path: string) => Promise<LocalModelFile>) | undefined;
  getStreamed: ((path: string) => Promise<Blob>) | undefined;
}> {
  const manifest = parseJson('manifest.json', await read('manifest.json')) as unknown as ModelManifest;
  if (typeof manifest.files !== 'object' || manifest.files === null) {
    throw new ModelLoadError('manifest.json has no "files" map of {sha256, size} entries', {});
  }
  if (Object.keys(manifest.files).length === 0) {
    throw new ModelLoadError('manifest.json lists no files, so no model file can be verified; pin the directory with `edgearmor manifest DIR`', {});
  }
  // Concurrent readers of one file (genai_config.json is read for the layout and for the config) share one read.
  const reads = new Map<string, Promise<Uint8Array>>();
  const get = (path: string): Promise<Uint8Array> => {
    let pending = reads.get(path);
    if (!pending) reads.set(path, (pending = getOnce(path)));
    return pending;
  };
  const getOnce = async (path: string): Promise<Uint8Array> => {
    const bytes = await read(path);
    await verifyFile(manifest, path, bytes);
    onFile?.(path, bytes.byteLength);
    return bytes;
  };
  const local = read.local;
  const getLocal = local
    ? async (path: string): Promise<LocalModelFile> => {
        const file = await local(path);
        await verifyDigest(manifest, path, file.size, () => file.sha256);
        onFile?.(path, file.size);
        return file;
      }
    : undefined;
  const streamed = read.streamed;
  const getStreamed = streamed
    ? async (path: string): Promise<Blob> => {
        const entry = listedEntry(manifest, path);
        const check = streamCheck(path, entry);
        const blob = await streamed(path, check);
        // Whatever the reader: no bytes it did not pass through the whole check, and only those, are used.
        if (!check.passed) throw new IntegrityError(`model file "${path}" came back from the reader without passing its check against manifest.json: refusing to use an unverified file`, { file: path });
        checkSize(path, entry, blob.size);
        onFile?.(path, blob.size);
        return blob;
      }
    : undefined;
  return { manifest, get, getLocal, getStreamed };
}

/**
 * What names a model's tokenizer by content: the pinned hashes of the files it is built from (tokenizer.json,
 * tokenizer_config.json and a chat_template.jinja beside them), or null when the manifest does not pin them all.
 */
export function tokenizerKey(manifest: ModelManifest): string | null {
  const hashes = ['tokenizer.json', 'tokenizer_config.json'].map((path) => manifest.files[path]?.sha256);
  if (hashes.some((h) => typeof h !== 'string' || h === '')) return null;
  return [...hashes, manifest.files[CHAT_TEMPLATE_FILE]?.sha256 ?? 'no-template'].join(':');
}

async function readTokenizerFiles(manifest: ModelManifest, get: (path: string) => Promise<Uint8Array>, read: FileReader): Promise<TokenizerModelFiles> {
  // onnxruntime-genai's builder writes genai_config.json and no config.json: the dims then come from it.
  const genaiOnly = !manifest.files['config.json'] && manifest.files[GENAI_CONFIG_FILE] !== undefined;
  const [config, tokenizerJson, tokenizerConfig, modelOptions, template] = await Promise.all([
    genaiOnly ? get(GENAI_CONFIG_FILE).then((b) => configFromGenai(parseJson(GENAI_CONFIG_FILE, b))) : get('config.json').then((b) => parseJson('config.json', b)),
    get('tokenizer.json').then((b) => parseJson('tokenizer.json', b)),
    get('tokenizer_config.json').then((b) => parseJson('tokenizer_config.json', b)),
    readModelOptions(manifest, get, read),
    manifest.files[CHAT_TEMPLATE_FILE] ? get(CHAT_TEMPLATE_FILE).then((b) => new TextDecoder().decode(b)) : null,
  ]);
  // Newer exports keep the template in its own file, which transformers prefers to tokenizer_config.json's.
  return { manifest, config, tokenizerJson, tokenizerConfig: template === null ? tokenizerConfig : { ...tokenizerConfig, chat_template: template }, modelOptions };
}

/** The model's guard-options.json when its manifest pins it; one in the directory that the manifest does not pin is refused. */
async function readModelOptions(manifest: ModelManifest, get: (path: string) => Promise<Uint8Array>, read: FileReader): Promise<ModelOptionsFile | null> {
  if (manifest.files[MODEL_OPTIONS_FILE]) return parseModelOptionsFile(parseJson(MODEL_OPTIONS_FILE, await get(MODEL_OPTIONS_FILE)));
  // An unpinned options file would move the operating point unverified; ignoring it would hide that it is there.
  if (await read.has?.(MODEL_OPTIONS_FILE)) {
    throw new IntegrityError(`model file "${MODEL_OPTIONS_FILE}" is not listed in manifest.json: refusing to use an unverified file (pin it with \`edgearmor manifest <dir>\` or remove it)`, {
      file: MODEL_OPTIONS_FILE,
    });
  }
  return null;
}

/**
 * A reader whose manifest.json is the one the caller gives (e.g. for a hub URL, which has none):
 * every other file still comes from `read` and is checked against that manifest.
 */
export function withManifest(read: FileReader, manifest: ModelManifest): FileReader {
  const bytes = new TextEncoder().encode(JSON.stringify(manifest));
  const reader: FileReader = (path) => (path === 'manifest.json' ? Promise.resolve(bytes) : read(path));
  return Object.assign(reader, read.has ? { has: read.has } : {}, read.local ? { local: read.local } : {}, read.streamed ? { streamed: read.streamed } : {});
}
