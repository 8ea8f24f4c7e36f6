/**
 * Models from a URL in Node, as from the hub: the caller supplies the manifest (the hub has none),
 * files are fetched once and cached by SHA-256, a second load needs no network, a damaged cache
 * entry is fetched again, and a file the server altered is refused.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntegrityError, InvalidOptionsError } from '../../src/core/errors.js';
import { urlReader } from '../../src/engine/files-node.js';
import { loadModelFiles, type ModelManifest } from '../../src/engine/model-files.js';
import { createNodeGuard } from '../../src/node.js';

const HUB = fileURLToPath(new URL('../fixtures/tiny-proxy-hub/', import.meta.url));
const MODEL_TIMEOUT_MS = 120_000;
const manifest = JSON.parse(readFileSync(join(HUB, 'manifest.json'), 'utf8')) as ModelManifest;

describe('model files from a URL in Node', () => {
  let server: Server;
  let url: string;
  const requests: string[] = [];
  let tamper: string | null = null;
  const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-cache-'));

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
      requests.push(path);
      // Like a hub repository: the model's files, and no manifest.json.
      if (path === 'manifest.json' || !manifest.files[path]) return void res.writeHead(404).end();
      const bytes = readFileSync(join(HUB, path));
      if (path === tamper) bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
      res.writeHead(200, { 'content-length': bytes.byteLength }).end(bytes);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it(
    'loads with the supplied manifest, caches by SHA-256, and loads again from the cache alone',
    async () => {
      const guard = createNodeGuard({ modelUrl: url, modelManifest: manifest, cacheDir, modelVariant: 'fp32', backends: ['node'] });
      expect(await guard.ready).toMatchObject({ state: 'ready', model: 'tiny-proxy-hub', variant: 'fp32' });
      await guard.dispose();
      expect(requests).not.toContain('manifest.json');
      expect(requests).toEqual(expect.arrayContaining(['config.json', 'tokenizer.json', 'onnx/model.onnx', 'onnx/model.onnx_data']));
      expect(readdirSync(join(cacheDir, 'blobs')).sort()).toEqual(
        ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model.onnx_data'].map((f) => manifest.files[f]!.sha256).sort(),
      );
      requests.length = 0;
      const again = await loadModelFiles(urlReader(url, { cacheDir, manifest }), 'fp32');
      expect(again.externalData.map((d) => d.path)).toEqual(['model.onnx_data']);
      expect(requests).toEqual([]);
    },
    MODEL_TIMEOUT_MS,
  );

  it('fetches a damaged cache entry again, and refuses a file the server altered', async () => {
    const blob = join(cacheDir, 'blobs', manifest.files['config.json']!.sha256);
    writeFileSync(blob, '{"damaged": true}');
    requests.length = 0;
    await loadModelFiles(urlReader(url, { cacheDir, manifest }), 'fp32');
    expect(requests).toEqual(['config.json']);
    tamper = 'onnx/model_q4.onnx';
    await expect(loadModelFiles(urlReader(url, { cacheDir, manifest }), 'q4')).rejects.toThrow(IntegrityError);
    tamper = null;
  });

  it('names bad URL options', () => {
    expect(() => createNodeGuard({ modelUrl: 'ftp://x/' })).toThrow(InvalidOptionsError);
    expect(() => createNodeGuard({ modelUrl: url, modelDir: HUB })).toThrow(/received both modelDir and modelUrl/);
  });
});
