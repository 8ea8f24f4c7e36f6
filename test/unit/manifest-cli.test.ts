/**
 * `edgearmor manifest` pins a directory exactly as model/manifest.py does, and the loader refuses
 * a file that changed after pinning; the remote-proxy flags fail fast with one-line errors.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IntegrityError } from '../../src/core/errors.js';
import { buildManifest, directoryReader, embeddedModelDir, gitBlobSha1 } from '../../src/engine/files-node.js';
import { loadTokenizerFiles } from '../../src/engine/model-files.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI_TIMEOUT_MS = 60_000;
const TOKENIZER_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];

describe('model manifests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-manifest-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lists every file with the hashes model/manifest.py wrote for the embedded model', async () => {
    const committed = JSON.parse(readFileSync(join(embeddedModelDir(), 'manifest.json'), 'utf8')) as { files: unknown; model: string };
    const built = await buildManifest(embeddedModelDir());
    expect(built.files).toEqual(committed.files);
    expect(built.model).toBe(committed.model);
  });

  it(
    'pins a copied tokenizer directory from the command line; a file changed afterwards is refused',
    async () => {
      for (const f of TOKENIZER_FILES) cpSync(join(embeddedModelDir(), f), join(dir, f));
      const r = spawnSync(NODE, [CLI, 'manifest', dir, '--name', 'my-tokenizer'], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
      expect(r.status).toBe(0);
      expect(r.stderr).toContain('3 files of my-tokenizer pinned');
      const files = await loadTokenizerFiles(directoryReader(dir));
      expect(files.manifest.model).toBe('my-tokenizer');
      writeFileSync(join(dir, 'tokenizer_config.json'), readFileSync(join(dir, 'tokenizer_config.json'), 'utf8').replace('<|user|>', '<|usr|>'));
      await expect(loadTokenizerFiles(directoryReader(dir))).rejects.toThrow(IntegrityError);
    },
    CLI_TIMEOUT_MS,
  );

  it('checks every file against the hashes the hub records (LFS SHA-256, git blob SHA-1) before pinning', async () => {
    const hubDir = mkdtempSync(join(tmpdir(), 'edgearmor-hub-'));
    try {
      mkdirSync(join(hubDir, 'onnx'));
      writeFileSync(join(hubDir, 'config.json'), '{"model_type": "llama"}\n');
      writeFileSync(join(hubDir, 'onnx/model_q4.onnx'), Buffer.from([1, 2, 3, 4]));
      // git's own blob id of the small file
      const gitOid = execFileSync('git', ['hash-object', join(hubDir, 'config.json')], { encoding: 'utf8' }).trim();
      expect(gitBlobSha1(readFileSync(join(hubDir, 'config.json')))).toBe(gitOid);
      const weights = createHash('sha256').update(Buffer.from([1, 2, 3, 4])).digest('hex');
      const tree = [
        { type: 'file', path: 'config.json', size: 24, oid: gitOid },
        { type: 'file', path: 'onnx/model_q4.onnx', size: 4, oid: 'ab'.repeat(20), lfs: { oid: weights, size: 4 } },
        { type: 'file', path: 'onnx/model.onnx', size: 9, oid: 'cd'.repeat(20), lfs: { oid: 'ef'.repeat(32), size: 9 } },
      ];
      const manifest = await buildManifest(hubDir, 'hub-model', tree);
      expect(Object.keys(manifest.files)).toEqual(['config.json', 'onnx/model_q4.onnx']);
      expect(manifest.files['onnx/model_q4.onnx']!.sha256).toBe(weights);
      writeFileSync(join(hubDir, 'onnx/model_q4.onnx'), Buffer.from([1, 2, 3, 5]));
      await expect(buildManifest(hubDir, 'hub-model', tree)).rejects.toThrow(/"onnx\/model_q4\.onnx" differs from the hub's record: sha256 [0-9a-f]{64}, the hub records [0-9a-f]{64}/);
      writeFileSync(join(hubDir, 'onnx/model_q4.onnx'), Buffer.from([1, 2, 3, 4]));
      writeFileSync(join(hubDir, 'config.json'), '{"model_type": "gemma"}\n');
      await expect(buildManifest(hubDir, 'hub-model', tree)).rejects.toThrow(/"config\.json" differs from the hub's record: git blob sha1/);
      writeFileSync(join(hubDir, 'extra.py'), 'print(1)');
      await expect(buildManifest(hubDir, 'hub-model', tree)).rejects.toThrow(IntegrityError);
    } finally {
      rmSync(hubDir, { recursive: true, force: true });
    }
  });

  it('rejects incomplete remote-proxy flags with a one-line error before loading anything', () => {
    const fixture = join(ROOT, 'examples/seed-travel.jsonl');
    const noModel = spawnSync(NODE, [CLI, 'check', fixture, '--remote-proxy', 'http://127.0.0.1:9'], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(noModel.status).toBe(2);
    expect(noModel.stderr.trim()).toBe('edgearmor: --remote-proxy needs --remote-model <served model name>');
    const badUrl = spawnSync(NODE, [CLI, 'check', fixture, '--remote-proxy', 'gpu-box:8000', '--remote-model', 'm'], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(badUrl.status).toBe(2);
    expect(badUrl.stderr).toMatch(/remoteProxy\.url: received "gpu-box:8000"; allowed: an absolute http\(s\) URL/);
  });

  it('lists the remote-proxy flags in both help texts', () => {
    for (const args of [['--help'], ['eval', '--help']]) {
      const help = spawnSync(NODE, [CLI, ...args], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
      expect(help.stdout).toContain('--remote-proxy <url>');
      expect(help.stdout).not.toContain('${');
    }
  });
});
