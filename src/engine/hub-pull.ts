/**
 * `edgearmor pull`: fetches one variant of a hub model (the onnx-community / transformers.js layout, or
 * onnxruntime-genai's: genai_config.json, model.onnx and model.onnx.data at the root, one build) into
 * a model directory pinned to a commit, as huggingface_hub would find it: HF_ENDPOINT and HF_TOKEN, the
 * revision resolved to its commit, the file list from the hub's tree, each file checked against the hash
 * the hub records for it.
 *
 * Files are written into `<dir>.partial` beside the destination, which a later pull resumes, and the
 * directory is renamed into place only once every file is verified and its manifest written: no reader
 * ever sees a half-written model directory.
 */
import { mkdir, open, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import type { HubSource, ModelManifest, ModelVariant } from '../core/runtime-options.js';
import { defaultCacheDir, sortedFiles, verifyAgainstHub, type FileDigest, type HubTreeEntry } from './files-node.js';
import { downloadFile, hubGet, type HubClient, type HubFailure } from './hub-download.js';
import { GENAI_DEFAULT_ONNX, graphVariant } from './genai-layout.js';
import { CHAT_TEMPLATE_FILE, GENAI_CONFIG_FILE, isGenaiLayout, isModelVariant, onnxWithData, VARIANT_FILES, variantWeightPaths } from './model-files.js';

/** The hub huggingface_hub uses when HF_ENDPOINT is not set. */
export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';

/** Options of {@link pullModel}; every one optional. */
export interface PullOptions {
  /** A branch, tag or commit. @defaultValue 'main' */
  revision?: string;
  /** @defaultValue 'q4' (the guard's default modelVariant) */
  variant?: ModelVariant;
  /** The model directory to create. @defaultValue `<cacheDir>/models/<org>--<name>/<commit>/<variant>` (`.../<commit>/genai` for onnxruntime-genai's layout) */
  outDir?: string;
  /** @defaultValue defaultCacheDir() (the Node guard's: $XDG_CACHE_HOME/edgearmor or ~/.cache/edgearmor) */
  cacheDir?: string;
  /** The hub's base URL. @defaultValue $HF_ENDPOINT, else https://huggingface.co */
  endpoint?: string;
  /** Sent as `Authorization: Bearer` (gated and private repositories); null sends none. @defaultValue $HF_TOKEN */
  token?: string | null;
  /** Resumptions of one file after a dropped connection, within this pull. @defaultValue 5 */
  retries?: number;
  signal?: AbortSignal;
  onProgress?: (event: PullProgress) => void;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
}

/** What a pull reports as it goes. */
export type PullProgress =
  | { type: 'resolved'; repo: string; revision: string; commit: string; variant: ModelVariant; dir: string; files: Array<{ path: string; size: number }>; genai: boolean }
  | { type: 'file'; file: string; index: number; count: number; loadedBytes: number; totalBytes: number }
  | { type: 'verified'; file: string; bytes: number };

/** A pulled model directory. */
export interface PulledModel extends HubSource {
  dir: string;
  variant: ModelVariant;
  /** The files pinned in its manifest. */
  files: string[];
  /** Whether the directory was there already (nothing was downloaded). */
  alreadyPresent: boolean;
}

/** Files a model directory has besides its weights: what the guard reads, then what describes the model further. */
const REQUIRED_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];
const OPTIONAL_FILES = ['generation_config.json', 'special_tokens_map.json', CHAT_TEMPLATE_FILE];
/** onnxruntime-genai's model builder writes genai_config.json in place of config.json, and the tokenizer's files beside it. */
const GENAI_REQUIRED_FILES = [GENAI_CONFIG_FILE, 'tokenizer.json', 'tokenizer_config.json'];
/** The directory a genai pull goes to by default, in place of the variant's: a genai repository holds one build, read from its graph. */
const GENAI_DIR = 'genai';
const MAX_REPO_ID_LENGTH = 96;
const DEFAULT_RETRIES = 5;
const LOCK_FILE = '.pull.lock';
const TARGET_FILE = '.pull-target.json';

const invalid = (option: string, message: string) => new InvalidOptionsError(message, { option });

/** Checks a repo id as the hub's own rules do (huggingface_hub validate_repo_id). */
function checkRepoId(repo: unknown): string {
  const part = '[A-Za-z0-9_](?:[\\w.-]*[A-Za-z0-9_])?';
  if (typeof repo !== 'string' || !new RegExp(`^(?:${part}/)?${part}$`).test(repo) || repo.includes('--') || repo.includes('..') || repo.length > MAX_REPO_ID_LENGTH) {
    throw invalid('repo', `invalid repo id ${JSON.stringify(repo)}; allowed: "<namespace>/<name>" (or "<name>") of letters, digits, "-", "_" and ".", at most ${MAX_REPO_ID_LENGTH} characters, e.g. onnx-community/Qwen2.5-0.5B-Instruct`);
  }
  return repo;
}

/** The hub's base URL without a trailing slash; refuses anything but http(s). */
export function hubEndpoint(raw: string | undefined): string {
  const value = raw || DEFAULT_HUB_ENDPOINT;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw invalid('endpoint', `HF_ENDPOINT: received ${JSON.stringify(value)}; allowed: an http(s) URL such as ${DEFAULT_HUB_ENDPOINT}`);
  return value.replace(/\/+$/, '');
}

/** The endpoint as a manifest records it: no user name or password. */
function publicEndpoint(endpoint: string): string {
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/** The hub's own reasons for a failed request about a repository and revision, in one line each. */
function hubReasons(repo: string, revision: string, client: HubClient): (f: HubFailure) => ModelLoadError | null {
  const at = `at ${client.endpoint}`;
  return (f) => {
    const details = { repo, revision, status: f.status, endpoint: client.endpoint };
    if (f.code === 'RepoNotFound' || (f.status === 401 && f.code === null)) {
      const hint = client.headers['authorization'] ? ' (or HF_TOKEN gives no access to it)' : '; if it is private or gated, set HF_TOKEN';
      return new ModelLoadError(`repository "${repo}" not found ${at} (HTTP ${f.status}): check the id${hint}`, details);
    }
    if (f.code === 'RevisionNotFound') return new ModelLoadError(`revision "${revision}" not found in "${repo}" ${at} (HTTP ${f.status}): give a branch, tag or commit of the repository`, details);
    if (f.code === 'GatedRepo') return new ModelLoadError(`"${repo}" is gated ${at}: accept its terms on the hub, then set HF_TOKEN to a token of that account (HTTP ${f.status})`, details);
    if (f.status === 404) return new ModelLoadError(`"${repo}" ${at} has no revision "${revision}", or no such repository exists (HTTP 404)`, details);
    return null;
  };
}

/** The commit a revision points at. */
async function resolveCommit(client: HubClient, repo: string, revision: string): Promise<string> {
  const url = `${client.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}`;
  const response = await hubGet(client, url, `revision "${revision}" of "${repo}"`, hubReasons(repo, revision, client));
  const sha = ((await response.json().catch(() => null)) as { sha?: unknown } | null)?.sha;
  if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha)) throw new ModelLoadError(`${url} did not answer with a commit ("sha" of 40 hex digits): is ${client.endpoint} a Hugging Face hub?`, { url });
  return sha;
}

/** The next page of a paginated listing (`Link: <url>; rel="next"`), only on the hub's own origin, where the token may go. */
function nextPage(response: Response, endpoint: string): string | null {
  const next = /<([^>]+)>\s*;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  return next !== undefined && new URL(next, endpoint).origin === new URL(endpoint).origin ? new URL(next, endpoint).href : null;
}

/** Every file of the repository at `commit`, as the hub lists them. */
async function listFiles(client: HubClient, repo: string, revision: string, commit: string): Promise<HubTreeEntry[]> {
  const files: HubTreeEntry[] = [];
  let url: string | null = `${client.endpoint}/api/models/${repo}/tree/${commit}?recursive=true`;
  while (url !== null) {
    const response: Response = await hubGet(client, url, `the file list of "${repo}"`, hubReasons(repo, revision, client));
    const page = (await response.json().catch(() => null)) as unknown;
    if (!Array.isArray(page)) throw new ModelLoadError(`${url} did not answer with a list of files: is ${client.endpoint} a Hugging Face hub?`, { url });
    files.push(...(page as HubTreeEntry[]).filter((e) => e?.type === 'file' && typeof e.path === 'string'));
    url = nextPage(response, client.endpoint);
  }
  return files;
}

/** A listed path this pull may write: relative, no `..`, no backslash or empty part. */
const safePath = (path: string) => path.split('/').every((p) => p !== '' && p !== '.' && p !== '..' && !p.includes('\\'));

/**
 * The files of onnxruntime-genai's layout in a listing: genai_config.json, its graph (the builder's
 * model.onnx, else the one .onnx file at the root) with model.onnx.data, and the tokenizer's files.
 */
function genaiPaths(byPath: ReadonlyMap<string, HubTreeEntry>, where: string, repo: string): string[] {
  const graphs = [...byPath.keys()].filter((p) => /^[^/]+\.onnx$/.test(p));
  const graph = byPath.has(GENAI_DEFAULT_ONNX) ? GENAI_DEFAULT_ONNX : graphs.length === 1 ? graphs[0] : undefined;
  if (graph === undefined) {
    const found = graphs.length === 0 ? 'no .onnx file beside it' : `several .onnx files beside it (${graphs.join(', ')}) and none named ${GENAI_DEFAULT_ONNX}`;
    throw new ModelLoadError(`${where} has ${GENAI_CONFIG_FILE} (onnxruntime-genai's layout) but ${found}; EdgeArmor loads one graph from a genai model directory`, { repo, graphs });
  }
  const missing = GENAI_REQUIRED_FILES.filter((f) => !byPath.has(f));
  if (missing.length > 0) {
    throw new ModelLoadError(`${where} has no ${missing.join(', ')}: EdgeArmor needs ${GENAI_REQUIRED_FILES.join(', ')} beside ${graph} (onnxruntime-genai's layout)`, { repo, missing });
  }
  return [...GENAI_REQUIRED_FILES, ...['config.json', ...OPTIONAL_FILES].filter((f) => byPath.has(f)), ...onnxWithData([...byPath.keys()], graph)];
}

/** The files one variant needs, from the hub's listing (onnxruntime-genai's layout where the repository has it); throws naming what is missing (and which variants exist). */
function filesOfVariant(tree: readonly HubTreeEntry[], repo: string, revision: string, variant: ModelVariant): { entries: HubTreeEntry[]; genai: boolean } {
  const byPath = new Map(tree.map((e) => [e.path, e]));
  const where = `"${repo}" at revision "${revision}"`;
  const genai = isGenaiLayout([...byPath.keys()], variant);
  if (!genai && !byPath.has(VARIANT_FILES[variant])) {
    const has = (Object.keys(VARIANT_FILES) as ModelVariant[]).filter((v) => byPath.has(VARIANT_FILES[v]));
    const known = new Set(Object.values(VARIANT_FILES));
    const others = [...byPath.keys()].filter((p) => p.endsWith('.onnx') && !known.has(p));
    const rest = others.length > 0 ? `; other onnx files there, which EdgeArmor does not load: ${others.join(', ')}` : '';
    throw new ModelLoadError(`${where} has no ${variant} variant (${VARIANT_FILES[variant]} is not in it); it has: ${has.join(', ') || 'none of fp32, q4, fp16, q4f16'}${rest}`, { repo, variant, variants: has });
  }
  const missing = genai ? [] : REQUIRED_FILES.filter((f) => !byPath.has(f));
  if (missing.length > 0) {
    throw new ModelLoadError(`${where} has no ${missing.join(', ')}: EdgeArmor needs ${REQUIRED_FILES.join(', ')} beside onnx/ (the onnx-community / transformers.js layout)`, { repo, missing });
  }
  const paths = genai ? genaiPaths(byPath, where, repo) : [...REQUIRED_FILES, ...OPTIONAL_FILES.filter((f) => byPath.has(f)), ...variantWeightPaths([...byPath.keys()], variant)];
  const entries = paths.map((path) => {
    const entry = byPath.get(path)!;
    const size = entry.lfs?.size ?? entry.size;
    if (!safePath(path) || typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0 || (entry.lfs ? typeof entry.lfs.oid !== 'string' : typeof entry.oid !== 'string')) {
      throw new ModelLoadError(`the hub's listing of ${where} has no usable path, size and hash for "${path}"`, { repo, file: path });
    }
    return { ...entry, size };
  });
  return { entries, genai };
}

/** The variant a pulled directory holds: the one asked for, or in onnxruntime-genai's layout the build's own, read from its graph. */
async function pulledVariant(dir: string, manifest: ModelManifest, variant: ModelVariant): Promise<ModelVariant> {
  const paths = Object.keys(manifest.files);
  if (!isGenaiLayout(paths, variant)) return variant;
  const graph = paths.includes(GENAI_DEFAULT_ONNX) ? GENAI_DEFAULT_ONNX : paths.find((p) => /^[^/]+\.onnx$/.test(p));
  return graph === undefined ? variant : graphVariant(new Uint8Array(await readFile(join(dir, graph))));
}

/** The manifest of a directory, or null when it has none that parses. */
async function manifestOf(dir: string): Promise<ModelManifest | null> {
  return readFile(join(dir, 'manifest.json'), 'utf8').then((t) => JSON.parse(t) as ModelManifest, () => null);
}

/** Whether `dir` is this pull done already; throws when it is something else that is not an empty directory. */
async function finished(dir: string, repo: string, commit: string, variant: ModelVariant): Promise<boolean> {
  const entries = await readdir(dir).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? [] : null));
  if (entries?.length === 0) return false;
  const manifest = entries === null ? null : await manifestOf(dir);
  const holds = manifest?.files?.[VARIANT_FILES[variant]] !== undefined || manifest?.files?.[GENAI_CONFIG_FILE] !== undefined;
  if (manifest?.hub?.repo === repo && manifest.hub.commit === commit && holds) return true;
  throw invalid('outDir', `${dir} already exists and is not a pull of "${repo}" at ${commit} (${variant}); choose a new or empty directory, or remove it`);
}

/** Whether a process with this pid runs (one that exists but is not ours to signal counts). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes `staging` this process's, for this target: another live pull's is refused; a dead one's files
 * are kept for resuming when they were for the same target, else removed. Returns the release, which
 * forgets the target too once the pull is `done` (a failed pull leaves it, so the next one resumes).
 */
async function claimStaging(staging: string, target: string): Promise<(done: boolean) => Promise<void>> {
  await mkdir(staging, { recursive: true });
  const lock = join(staging, LOCK_FILE);
  for (let tries = 0; ; tries++) {
    try {
      await writeFile(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(await readFile(lock, 'utf8').catch(() => ''));
      if (tries > 0 || (Number.isInteger(pid) && pid > 0 && running(pid))) {
        throw new ModelLoadError(`another edgearmor pull${pid ? ` (pid ${pid})` : ''} is writing ${staging}; wait for it, or remove that directory if no pull is running`, { staging });
      }
      await rm(lock, { force: true });
    }
  }
  if ((await readFile(join(staging, TARGET_FILE), 'utf8').catch(() => null)) !== target) {
    for (const name of await readdir(staging)) if (name !== LOCK_FILE) await rm(join(staging, name), { recursive: true, force: true });
    await writeFile(join(staging, TARGET_FILE), target);
  }
  return async (done) => {
    if (done) await rm(join(staging, TARGET_FILE), { force: true });
    await rm(lock, { force: true });
  };
}

/** Writes a file and makes it durable before the directory is renamed into place. */
async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Pulls one variant of a hub model into a model directory pinned to the commit its revision points at,
 * and returns where it is. Throws a one-line EdgeArmorError for bad arguments, an unknown repository or
 * revision, a missing variant, a network failure, or a file that differs from the hub's record.
 */
export async function pullModel(repo: string, options: PullOptions = {}): Promise<PulledModel> {
  checkRepoId(repo);
  const revision = options.revision ?? 'main';
  if (typeof revision !== 'string' || revision === '' || /[\0-\x1f]/.test(revision)) throw invalid('revision', `invalid revision ${JSON.stringify(revision)}; allowed: a branch, tag or commit name`);
  const variant = options.variant ?? 'q4';
  if (!isModelVariant(variant)) throw invalid('variant', `invalid variant ${JSON.stringify(variant)}; allowed: ${Object.keys(VARIANT_FILES).join(', ')}`);
  const retries = options.retries ?? DEFAULT_RETRIES;
  if (!Number.isInteger(retries) || retries < 0) throw invalid('retries', `invalid retries ${JSON.stringify(retries)}; allowed: an integer >= 0`);
  const endpoint = hubEndpoint(options.endpoint ?? process.env['HF_ENDPOINT']);
  const token = options.token === undefined ? process.env['HF_TOKEN'] || null : options.token;
  const client: HubClient = { endpoint, fetch: options.fetch ?? globalThis.fetch, headers: token ? { authorization: `Bearer ${token}` } : {}, signal: options.signal };

  const reasons = hubReasons(repo, revision, client);
  const commit = await resolveCommit(client, repo, revision);
  const dirFor = (leaf: string) => resolve(options.outDir ?? join(options.cacheDir ?? defaultCacheDir(), 'models', repo.replace('/', '--'), commit, leaf));
  const source: HubSource = { repo, revision, commit, endpoint: publicEndpoint(endpoint) };
  const present = async (at: string): Promise<PulledModel> => {
    const manifest = (await manifestOf(at))!;
    return { ...source, dir: at, variant: await pulledVariant(at, manifest, variant), files: Object.keys(manifest.files), alreadyPresent: true };
  };
  let dir = dirFor(variant);
  if (await finished(dir, repo, commit, variant)) return present(dir);
  const { entries: wanted, genai } = filesOfVariant(await listFiles(client, repo, revision, commit), repo, revision, variant);
  if (genai && options.outDir === undefined) {
    dir = dirFor(GENAI_DIR);
    if (await finished(dir, repo, commit, variant)) return present(dir);
  }
  options.onProgress?.({ type: 'resolved', repo, revision, commit, variant, dir, files: wanted.map((e) => ({ path: e.path, size: e.size! })), genai });

  const staging = `${dir}.partial`;
  const release = await claimStaging(staging, JSON.stringify({ repo, commit, variant }));
  let released = false;
  try {
    const digests = new Map<string, FileDigest>();
    for (const [index, entry] of wanted.entries()) {
      const file = join(staging, entry.path);
      await mkdir(dirname(file), { recursive: true });
      const resolveUrl = `${endpoint}/${repo}/resolve/${commit}/${entry.path.split('/').map(encodeURIComponent).join('/')}`;
      const report = (loadedBytes: number) => options.onProgress?.({ type: 'file', file: entry.path, index, count: wanted.length, loadedBytes, totalBytes: entry.size! });
      report(0);
      const explain = (f: HubFailure) =>
        f.code === 'EntryNotFound' ? new ModelLoadError(`"${entry.path}" is in the hub's listing of "${repo}" at ${commit}, but ${endpoint} does not serve it (HTTP ${f.status})`, { repo, file: entry.path }) : reasons(f);
      const digest = await downloadFile(client, { name: entry.path, url: resolveUrl, file, size: entry.size!, gitBlob: !entry.lfs, retries, onBytes: report, explain });
      try {
        verifyAgainstHub(entry.path, digest, entry);
      } catch (e) {
        // A resumed file would keep its bad bytes: the next pull fetches it whole.
        await rm(file, { force: true });
        throw e;
      }
      digests.set(entry.path, digest);
      options.onProgress?.({ type: 'verified', file: entry.path, bytes: digest.size });
    }
    const files = sortedFiles(Object.fromEntries([...digests].map(([path, d]) => [path, { sha256: d.sha256, size: d.size }])));
    const manifest: ModelManifest & { created_by: string } = { files, model: repo, created_by: 'edgearmor pull', hub: source };
    await writeDurably(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await release(true);
    released = true;
    // rename() replaces an empty directory but no other: one left where the model goes is removed first.
    await rmdir(dir).catch(() => undefined);
    const placed = await rename(staging, dir).then(
      () => true,
      async (e: NodeJS.ErrnoException) => {
        // Another pull of the same target finished first: its directory is this one.
        if ((e.code === 'ENOTEMPTY' || e.code === 'EEXIST') && (await finished(dir, repo, commit, variant))) return false;
        throw e;
      },
    );
    if (!placed) await rm(staging, { recursive: true, force: true });
    return { ...source, dir, variant: await pulledVariant(dir, manifest, variant), files: Object.keys(files), alreadyPresent: !placed };
  } finally {
    if (!released) await release(false);
  }
}
