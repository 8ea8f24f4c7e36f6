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

export type { ModelManifest, ModelVariant } from '../core/runtime-options.js';

/**
 * Reads one file of a model by its path relative to the model directory. A reader that can tell cheaply
 * whether a file is there (a local directory) has `has`: the loader then refuses a guard-options.json the
 * manifest does not pin. A URL reader has none: it only ever fetches files the manifest lists. A reader of
 * files on this machine (Node) has `local`: external data files are then hashed as streams and handed to
 * onnxruntime by path, never read into memory, so weights of any size load.
 */
export type FileReader = ((relativePath: string) => Promise<Uint8Array>) & {
  has?: (relativePath: string) => Promise<boolean>;
  local?: (relativePath: string) => Promise<LocalModelFile>;
};

/** A model file on this machine, hashed where it lies (files-node.ts `directoryReader`). */
export interface LocalModelFile {
  /** Its absolute path. */
  file: string;
  sha256: string;
  size: number;
  /** Whether the file is still the one that was hashed (same inode, size, mtime and ctime): checked after onnxruntime has read it. */
  unchanged(): Promise<boolean>;
}

/** An external data file of the onnx file, by the name the graph uses: its bytes, or (Node) the verified file on disk. */
export type ExternalDataFile = { path: string; data: Uint8Array } | { path: string; local: LocalModelFile };

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
  /** The onnx file's external data files (`model.onnx_data`, `model.onnx_data_1`...), by the name the graph uses. */
  externalData: ExternalDataFile[];
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
  const entry = manifest.files[path];
  if (!entry) {
    throw new IntegrityError(`model file "${path}" is not listed in manifest.json: refusing to use an unverified file`, {
      file: path,
    });
  }
  if (size !== entry.size) {
    throw new IntegrityError(
      `model file "${path}" has ${size} bytes, the manifest says ${entry.size}: the file is truncated or was modified, which may indicate tampering`,
      { file: path, expectedSize: entry.size, actualSize: size },
    );
  }
  const actual = await sha256();
  if (actual !== entry.sha256) {
    throw new IntegrityError(
      `model file hash mismatch for "${path}": expected sha256 ${entry.sha256}, got ${actual}; this may indicate tampering`,
      { file: path, expected: entry.sha256, actual },
    );
  }
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
export type TokenizerModelFiles = Omit<ModelFiles, 'onnx' | 'externalData' | 'variant'>;

/** The onnx file of `variant` and, of `paths` (a manifest's or a hub listing's), its external data files. */
export function variantWeightPaths(paths: readonly string[], variant: ModelVariant): string[] {
  const onnxPath = VARIANT_FILES[variant];
  return [onnxPath, ...paths.filter((p) => p === `${onnxPath}_data` || p.startsWith(`${onnxPath}_data_`)).sort()];
}

/** The onnx file of `variant` and its external data files, as the manifest lists them. */
function weightFiles(manifest: ModelManifest, variant: ModelVariant): string[] {
  return variantWeightPaths(Object.keys(manifest.files), variant);
}

/** Every file a guard reads from a model directory for `variant` (what a build ships), manifest.json first. */
export function filesForVariant(manifest: ModelManifest, variant: ModelVariant): string[] {
  const listed = ['config.json', 'tokenizer.json', 'tokenizer_config.json', CHAT_TEMPLATE_FILE, MODEL_OPTIONS_FILE].filter((f) => manifest.files[f] !== undefined);
  return ['manifest.json', ...listed, ...weightFiles(manifest, variant).filter((f) => manifest.files[f] !== undefined)];
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
  const { manifest, get, getLocal } = await openManifest(read, onFile);
  const onnxPath = VARIANT_FILES[variant];
  if (!manifest.files[onnxPath]) {
    const has = (Object.keys(VARIANT_FILES) as ModelVariant[]).filter((v) => manifest.files[VARIANT_FILES[v]]);
    const name = typeof manifest.model === 'string' ? `model "${manifest.model}"` : 'the model (its manifest names none)';
    throw new ModelLoadError(`${name} has no ${variant} variant (${onnxPath} is not in its manifest); it has: ${has.join(', ') || 'none'}`, { variant, file: onnxPath });
  }
  const dataPaths = weightFiles(manifest, variant).slice(1);
  // The graph file is read (the attention adapter rewrites it; protobuf keeps it under 2 GiB); its external
  // data, where the reader has the files on disk, stays there.
  const [base, onnx, ...externalData] = await Promise.all([
    readTokenizerFiles(manifest, get, read),
    get(onnxPath),
    ...dataPaths.map(async (p): Promise<ExternalDataFile> => {
      const path = p.slice(p.lastIndexOf('/') + 1);
      return getLocal ? { path, local: await getLocal(p) } : { path, data: await get(p) };
    }),
  ]);
  return { ...base, onnx, externalData, variant };
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
): Promise<{ manifest: ModelManifest; get: (path: string) => Promise<Uint8Array>; getLocal: ((path: string) => Promise<LocalModelFile>) | undefined }> {
  const manifest = parseJson('manifest.json', await read('manifest.json')) as unknown as ModelManifest;
  if (typeof manifest.files !== 'object' || manifest.files === null) {
    throw new ModelLoadError('manifest.json has no "files" map of {sha256, size} entries', {});
  }
  if (Object.keys(manifest.files).length === 0) {
    throw new ModelLoadError('manifest.json lists no files, so no model file can be verified; pin the directory with `edgearmor manifest DIR`', {});
  }
  const get = async (path: string): Promise<Uint8Array> => {
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
  return { manifest, get, getLocal };
}

async function readTokenizerFiles(manifest: ModelManifest, get: (path: string) => Promise<Uint8Array>, read: FileReader): Promise<TokenizerModelFiles> {
  const [config, tokenizerJson, tokenizerConfig, modelOptions, template] = await Promise.all([
    get('config.json').then((b) => parseJson('config.json', b)),
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
  return Object.assign(reader, read.has ? { has: read.has } : {}, read.local ? { local: read.local } : {});
}
