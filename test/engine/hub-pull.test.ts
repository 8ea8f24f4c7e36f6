/**
 * `edgearmor pull` against a stand-in hub serving test/fixtures/tiny-proxy-hub in the hub's URL layout:
 * q4 and fp32 (with its external data) arrive pinned to the commit and the guard loads and checks them;
 * an interrupted pull leaves no model directory and the next one resumes with a Range request (or starts
 * over where the server ignores Range); every failure is one line and exit status 2.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../src/core/errors.js';
import type { GuardInput } from '../../src/core/types.js';
import { pullModel, type PullOptions } from '../../src/engine/hub-pull.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadTokenizerFiles, type ModelManifest } from '../../src/engine/model-files.js';
import { createNodeGuard } from '../../src/node.js';
import { TOOL_TURNS_TEMPLATE } from './chatml-fixture.js';
import { repoFiles, startStandInHub, type StandInHub } from './stand-in-hub.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const HUB_FIXTURE = fileURLToPath(new URL('../fixtures/tiny-proxy-hub/', import.meta.url));
const GENAI_FIXTURE = fileURLToPath(new URL('../fixtures/tiny-proxy-genai/', import.meta.url));
const GENAI_REPO = 'tiny/proxy-genai';
const MODEL_TIMEOUT_MS = 60_000;
const CLI_TIMEOUT_MS = 60_000;
const COMMIT = 'c0ffee'.padEnd(40, '0');
const REPO = 'tiny/proxy-hub';
// The same files without the fp16 and q4f16 variants.
const REPO_TWO_VARIANTS = 'tiny/proxy-hub-two-variants';
const TOKEN = 'hf_stand_in_secret';
const fixtureManifest = JSON.parse(readFileSync(join(HUB_FIXTURE, 'manifest.json'), 'utf8')) as ModelManifest;
const seed = JSON.parse(readFileSync(join(ROOT, 'examples/seed-travel.jsonl'), 'utf8').split('\n')[0]!) as GuardInput;

/** Runs the CLI without blocking this process (the stand-in hub answers from it). */
function runCli(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done, failed) => {
    const child = spawn(NODE, [CLI, ...args], { env: { ...process.env, HF_TOKEN: '', ...env }, timeout: CLI_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', failed);
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** The guard loads the directory and gives a model verdict on the seed case. */
async function checksWith(dir: string, variant: 'q4' | 'fp32'): Promise<void> {
  const guard = createNodeGuard({ modelDir: dir, modelVariant: variant, backends: ['node'] });
  try {
    expect(await guard.ready).toMatchObject({ state: 'ready', model: REPO, variant });
    expect((await guard.check(seed)).reason).toBe('model');
  } finally {
    await guard.dispose();
  }
}

describe('edgearmor pull', () => {
  let hub: StandInHub;
  let options: PullOptions;
  const files = repoFiles(HUB_FIXTURE).filter((f) => f !== 'manifest.json');

  beforeAll(async () => {
    hub = await startStandInHub({
      [REPO]: { dir: HUB_FIXTURE, files, commit: COMMIT },
      [REPO_TWO_VARIANTS]: { dir: HUB_FIXTURE, files: files.filter((f) => !/_(fp16|q4f16)\.onnx$/.test(f)), commit: COMMIT },
      [GENAI_REPO]: { dir: GENAI_FIXTURE, files: repoFiles(GENAI_FIXTURE).filter((f) => f !== 'manifest.json'), commit: COMMIT },
    });
    options = { endpoint: hub.url, cacheDir: mkdtempSync(join(tmpdir(), 'edgearmor-pull-')), token: null };
  });
  afterAll(() => hub.close());

  it(
    'pulls q4 into the cache pinned to the commit, with only the files the guard needs, and the guard checks with it',
    async () => {
      hub.requests.length = 0;
      const pulled = await pullModel(REPO, { ...options, variant: 'q4', token: TOKEN });
      expect(pulled).toMatchObject({ dir: join(options.cacheDir!, 'models', 'tiny--proxy-hub', COMMIT, 'q4'), commit: COMMIT, revision: 'main', alreadyPresent: false });
      expect(repoFiles(pulled.dir)).toEqual(['config.json', 'manifest.json', 'onnx/model_q4.onnx', 'tokenizer.json', 'tokenizer_config.json']);
      const manifest = JSON.parse(readFileSync(join(pulled.dir, 'manifest.json'), 'utf8')) as ModelManifest;
      expect(manifest.hub).toEqual({ repo: REPO, revision: 'main', commit: COMMIT, endpoint: hub.url });
      for (const [path, entry] of Object.entries(manifest.files)) expect(entry).toEqual(fixtureManifest.files[path]);
      expect(readdirSync(join(options.cacheDir!, 'models', 'tiny--proxy-hub', COMMIT))).toEqual(['q4']);
      // Every request carried the token; the listing was read across its pages; the weights came through the LFS redirect.
      expect(new Set(hub.requests.map((r) => r.authorization))).toEqual(new Set([`Bearer ${TOKEN}`]));
      expect(hub.requests.some((r) => r.path.includes('cursor='))).toBe(true);
      expect(hub.requests.map((r) => r.path)).toContain(`/lfs/${REPO}/resolve/${COMMIT}/onnx/model_q4.onnx`);
      await checksWith(pulled.dir, 'q4');

      hub.requests.length = 0;
      expect(await pullModel(REPO, { ...options, variant: 'q4' })).toMatchObject({ dir: pulled.dir, alreadyPresent: true });
      expect(hub.requests.map((r) => r.path)).toEqual([`/api/models/${REPO}/revision/main`]);
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'pulls fp32 with its external data from the command line: the directory on stdout, progress on stderr, the token never shown',
    async () => {
      const cache = mkdtempSync(join(tmpdir(), 'edgearmor-pull-cli-'));
      hub.requests.length = 0;
      const r = await runCli(['pull', REPO, '--variant', 'fp32'], { HF_ENDPOINT: `${hub.url}/`, HF_TOKEN: TOKEN, XDG_CACHE_HOME: cache });
      expect(r.stderr).not.toContain(TOKEN);
      expect(r.status).toBe(0);
      const dir = join(cache, 'edgearmor', 'models', 'tiny--proxy-hub', COMMIT, 'fp32');
      expect(r.stdout).toBe(`${dir}\n`);
      expect(r.stderr).toMatch(/\[5\/5\] onnx\/model\.onnx_data 1\.3 MB of 1\.3 MB \(100%\)/);
      expect(hub.requests.every((q) => q.authorization === `Bearer ${TOKEN}`)).toBe(true);
      expect(repoFiles(dir)).toEqual(['config.json', 'manifest.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'tokenizer.json', 'tokenizer_config.json']);
      await checksWith(dir, 'fp32');
    },
    MODEL_TIMEOUT_MS,
  );

  it('resumes an interrupted pull with a Range request, and no model directory exists in between', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-pull-resume-'));
    const dir = join(cacheDir, 'models', 'tiny--proxy-hub', COMMIT, 'q4');
    const partial = join(`${dir}.partial`, 'onnx/model_q4.onnx');
    hub.faults.dropAfter = { file: 'onnx/model_q4.onnx', bytes: 500_000, times: 1 };
    const error = await pullModel(REPO, { ...options, cacheDir, retries: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelLoadError);
    // At most the bytes sent before the drop arrive (the client may see the close before the last of them).
    const got = /the download of "onnx\/model_q4\.onnx" from http:\/\/127\.0\.0\.1:\d+ stopped after (\d+) of 1338437 bytes .*run the same command again to resume it/.exec((error as Error).message);
    const kept = Number(got?.[1]);
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(500_000);
    expect(existsSync(dir)).toBe(false);
    expect(statSync(partial).size).toBe(kept);

    hub.requests.length = 0;
    const resumed = await pullModel(REPO, { ...options, cacheDir });
    expect(hub.requests.find((r) => r.path.endsWith('model_q4.onnx'))?.range).toBe(`bytes=${kept}-`);
    expect(JSON.parse(readFileSync(join(resumed.dir, 'manifest.json'), 'utf8')).files['onnx/model_q4.onnx']).toEqual(fixtureManifest.files['onnx/model_q4.onnx']);
    expect(existsSync(`${dir}.partial`)).toBe(false);
  });

  it('resumes a dropped connection within one pull, and starts a file over where the server ignores Range', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-pull-retry-'));
    hub.faults.dropAfter = { file: 'onnx/model_q4.onnx', bytes: 300_000, times: 2 };
    hub.requests.length = 0;
    const pulled = await pullModel(REPO, { ...options, cacheDir });
    const ranges = hub.requests.filter((r) => r.path.startsWith('/lfs/') && r.path.endsWith('model_q4.onnx')).map((r) => r.range);
    expect(ranges).toHaveLength(3);
    expect(ranges[0]).toBeNull();
    const starts = ranges.slice(1).map((r) => Number(/^bytes=(\d+)-$/.exec(r ?? '')?.[1]));
    expect(starts[0]).toBeGreaterThan(0);
    expect(starts[1]).toBeGreaterThan(starts[0]!);
    expect(JSON.parse(readFileSync(join(pulled.dir, 'manifest.json'), 'utf8')).files['onnx/model_q4.onnx']).toEqual(fixtureManifest.files['onnx/model_q4.onnx']);

    const other = mkdtempSync(join(tmpdir(), 'edgearmor-pull-norange-'));
    hub.faults.dropAfter = { file: 'onnx/model_q4.onnx', bytes: 400_000, times: 1 };
    await expect(pullModel(REPO, { ...options, cacheDir: other, retries: 0 })).rejects.toThrow(/stopped after \d+ of 1338437 bytes/);
    hub.faults.ignoreRange = true;
    try {
      const whole = await pullModel(REPO, { ...options, cacheDir: other });
      expect(JSON.parse(readFileSync(join(whole.dir, 'manifest.json'), 'utf8')).files['onnx/model_q4.onnx']).toEqual(fixtureManifest.files['onnx/model_q4.onnx']);
    } finally {
      hub.faults.ignoreRange = false;
    }
  });

  it('stops on abort with no model directory, resumes afterwards, and refuses an output directory that holds something else', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-pull-abort-'));
    const controller = new AbortController();
    const seen: string[] = [];
    const aborted = pullModel(REPO, {
      ...options,
      cacheDir,
      signal: controller.signal,
      onProgress: (e) => {
        seen.push(e.type === 'file' ? `${e.file} ${e.index + 1}/${e.count}` : e.type);
        if (e.type === 'file' && e.file === 'onnx/model_q4.onnx' && e.loadedBytes > 0) controller.abort();
      },
    });
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen[0]).toBe('resolved');
    expect(seen).toContain('verified');
    expect(seen.at(-1)).toBe('onnx/model_q4.onnx 4/4');
    const dir = join(cacheDir, 'models', 'tiny--proxy-hub', COMMIT, 'q4');
    expect(existsSync(dir)).toBe(false);
    expect((await pullModel(REPO, { ...options, cacheDir })).dir).toBe(dir);

    const occupied = mkdtempSync(join(tmpdir(), 'edgearmor-pull-occupied-'));
    writeFileSync(join(occupied, 'notes.txt'), 'mine');
    await expect(pullModel(REPO, { ...options, outDir: occupied })).rejects.toThrow(/already exists and is not a pull of "tiny\/proxy-hub" at c0ffee0+ \(q4\); choose a new or empty directory/);
    expect(readdirSync(occupied)).toEqual(['notes.txt']);
  });

  it(
    "pulls a repository in onnxruntime-genai's layout: genai_config.json, model.onnx and model.onnx.data, the build's variant read from its graph, and the guard checks with it",
    async () => {
      const resolved: unknown[] = [];
      const pulled = await pullModel(GENAI_REPO, { ...options, onProgress: (e) => e.type === 'resolved' && resolved.push(e) });
      expect(resolved).toEqual([expect.objectContaining({ genai: true, files: expect.arrayContaining([{ path: 'model.onnx.data', size: statSync(join(GENAI_FIXTURE, 'model.onnx.data')).size }]) })]);
      expect(pulled).toMatchObject({ dir: join(options.cacheDir!, 'models', 'tiny--proxy-genai', COMMIT, 'genai'), variant: 'q4', alreadyPresent: false });
      expect(repoFiles(pulled.dir)).toEqual(['genai_config.json', 'manifest.json', 'model.onnx', 'model.onnx.data', 'tokenizer.json', 'tokenizer_config.json']);
      const guard = createNodeGuard({ modelDir: pulled.dir, modelVariant: pulled.variant, backends: ['node'] });
      try {
        expect(await guard.ready).toMatchObject({ state: 'ready', model: GENAI_REPO, variant: 'q4' });
        expect((await guard.check(seed)).reason).toBe('model');
      } finally {
        await guard.dispose();
      }
      expect(await pullModel(GENAI_REPO, { ...options, variant: 'fp16' })).toMatchObject({ dir: pulled.dir, variant: 'q4', alreadyPresent: true });
    },
    MODEL_TIMEOUT_MS,
  );

  it('pulls a chat_template.jinja the repository has, and the loader renders with it', async () => {
    const repoDir = mkdtempSync(join(tmpdir(), 'edgearmor-pull-jinja-'));
    cpSync(HUB_FIXTURE, repoDir, { recursive: true });
    writeFileSync(join(repoDir, 'chat_template.jinja'), TOOL_TURNS_TEMPLATE);
    const jinjaHub = await startStandInHub({ [REPO]: { dir: repoDir, files: [...files, 'chat_template.jinja'], commit: COMMIT } });
    try {
      const pulled = await pullModel(REPO, { ...options, endpoint: jinjaHub.url, outDir: join(repoDir, 'pulled') });
      expect(pulled.files).toContain('chat_template.jinja');
      expect((await loadTokenizerFiles(directoryReader(pulled.dir))).tokenizerConfig['chat_template']).toBe(TOOL_TURNS_TEMPLATE);
    } finally {
      await jinjaHub.close();
    }
  });

  it('names a revision the repository does not have, and the variants it has when the one asked for is missing', async () => {
    await expect(pullModel(REPO, { ...options, revision: 'v9' })).rejects.toThrow(/^revision "v9" not found in "tiny\/proxy-hub" at .* give a branch, tag or commit of the repository$/);
    await expect(pullModel(REPO_TWO_VARIANTS, { ...options, variant: 'q4f16' })).rejects.toThrow(/^"tiny\/proxy-hub-two-variants" at revision "main" has no q4f16 variant \(onnx\/model_q4f16\.onnx is not in it\); it has: fp32, q4$/);
  });

  // The command line turns each of these errors into its line on standard error and exit status 2 alike.
  it(
    'answers each failure with one line and exit status 2',
    async () => {
      const cache = mkdtempSync(join(tmpdir(), 'edgearmor-pull-errors-'));
      const env = { HF_ENDPOINT: hub.url, XDG_CACHE_HOME: cache };
      hub.faults.corrupt = 'onnx/model_q4.onnx';
      const unreachable = `http://127.0.0.1:${await closedPort()}`;
      const cases: Array<[string[], Record<string, string>, RegExp]> = [
        [['pull', 'tiny/nope'], env, /^edgearmor: repository "tiny\/nope" not found at http:\/\/127\.0\.0\.1:\d+ \(HTTP 404\): check the id; if it is private or gated, set HF_TOKEN$/],
        [['pull', REPO_TWO_VARIANTS], env, /"onnx\/model_q4\.onnx" differs from the hub's record: sha256 [0-9a-f]{64}, the hub records [0-9a-f]{64}; .*may indicate tampering$/],
        [['pull', REPO], { ...env, HF_ENDPOINT: unreachable }, /^edgearmor: cannot reach the hub at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\) .*check HF_ENDPOINT and the network$/],
        [['pull', REPO, '--variant', 'q8'], env, /^edgearmor: --variant: received "q8"; allowed: "q4" \| "fp32" \| "fp16" \| "q4f16"$/],
        [['pull', 'a/b/c'], env, /^edgearmor: invalid repo id "a\/b\/c"; allowed: "<namespace>\/<name>"/],
      ];
      try {
        const results = await Promise.all(cases.map(([args, e]) => runCli(args, e)));
        results.forEach((r, i) => {
          expect(r.status, cases[i]![0].join(' ')).toBe(2);
          expect(r.stdout).toBe('');
          expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(cases[i]![2]);
        });
      } finally {
        hub.faults.corrupt = null;
      }
      // The corrupt file is gone from the staging area, so the next pull fetches it whole; no model directory was made.
      const twoVariants = join(cache, 'edgearmor', 'models', 'tiny--proxy-hub-two-variants', COMMIT);
      expect(readdirSync(twoVariants)).toEqual(['q4.partial']);
      expect(existsSync(join(twoVariants, 'q4.partial', 'onnx/model_q4.onnx'))).toBe(false);
    },
    CLI_TIMEOUT_MS,
  );
});
