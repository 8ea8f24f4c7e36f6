/**
 * Models from a URL in Node, as from the hub: the caller supplies the manifest (the hub has none),
 * files are streamed into the cache and kept there by SHA-256, external data goes to onnxruntime by
 * path (never one Buffer), a second load needs no network, a damaged cache entry is fetched again, a
 * file the server altered is refused, and a download cut short leaves nothing a later load trusts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  /** The file whose download the server cuts off halfway, once. */
  let cut: string | null = null;
  const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-cache-'));

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
      requests.push(path);
      // Like a hub repository: the model's files, and no manifest.json.
      if (path === 'manifest.json' || !manifest.files[path]) return void res.writeHead(404).end();
      const bytes = readFileSync(join(HUB, path));
      if (path === tamper) bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
      res.writeHead(200, { 'content-length': bytes.byteLength });
      if (path === cut) {
        cut = null;
        res.write(bytes.subarray(0, bytes.byteLength >> 1), () => res.socket?.destroy());
        return;
      }
      res.end(bytes);
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
      expect(readdirSync(join(cacheDir, 'blobs')).sort()).toEqual(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx'].map((f) => manifest.files[f]!.sha256).sort());
      requests.length = 0;
      const again = await loadModelFiles(urlReader(url, { cacheDir, manifest }), 'fp32');
      expect(requests).toEqual([]);
      // The weights stay on disk under the name the graph gives, as a modelDir's do: onnxruntime reads them by path.
      const [data] = again.externalData;
      expect(data).toMatchObject({ path: 'model.onnx_data', local: { sha256: manifest.files['onnx/model.onnx_data']!.sha256, size: manifest.files['onnx/model.onnx_data']!.size } });
      const file = (data as { local: { file: string } }).local.file;
      expect(file.startsWith(join(cacheDir, 'external'))).toBe(true);
      expect(file.endsWith('/model.onnx_data')).toBe(true);
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

  it('refuses external data the server altered, naming the file and both hashes, and keeps nothing of it', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'edgearmor-cache-'));
    try {
      tamper = 'onnx/model.onnx_data';
      const refused = loadModelFiles(urlReader(url, { cacheDir: fresh, manifest }), 'fp32');
      await expect(refused).rejects.toThrow(IntegrityError);
      await expect(refused).rejects.toThrow(new RegExp(`"onnx/model.onnx_data": expected sha256 ${manifest.files['onnx/model.onnx_data']!.sha256}, got [0-9a-f]{64}`));
      expect(readdirSync(join(fresh, 'external'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toEqual([]);
    } finally {
      tamper = null;
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('leaves nothing of a download cut short that a later load would trust, and the next load fetches it whole', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'edgearmor-cache-'));
    try {
      cut = 'onnx/model.onnx_data';
      await expect(loadModelFiles(urlReader(url, { cacheDir: fresh, manifest }), 'fp32')).rejects.toThrow(/the download of model file "onnx\/model.onnx_data" .* stopped after \d+ of 1344768 bytes/);
      expect(readdirSync(join(fresh, 'external'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toEqual([]);
      requests.length = 0;
      const files = await loadModelFiles(urlReader(url, { cacheDir: fresh, manifest }), 'fp32');
      expect(requests).toEqual(['onnx/model.onnx_data']);
      const file = (files.externalData[0] as { local: { file: string } }).local.file;
      expect(existsSync(file)).toBe(true);
      expect(readdirSync(join(file, '..'))).toEqual(['model.onnx_data']);
    } finally {
      cut = null;
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('without a cache, refuses a file too large for memory before downloading it, and names cacheDir', async () => {
    const huge = { ...manifest, files: { ...manifest.files, 'onnx/model.onnx_data': { ...manifest.files['onnx/model.onnx_data']!, size: 3 * 2 ** 30 } } };
    await expect(loadModelFiles(urlReader(url, { cacheDir: null, manifest: huge }), 'fp32')).rejects.toThrow(/"onnx\/model.onnx_data" has 3221225472 bytes; without a cache directory .* give a cacheDir/);
  });

  it('names bad URL options', () => {
    expect(() => createNodeGuard({ modelUrl: 'ftp://x/' })).toThrow(InvalidOptionsError);
    expect(() => createNodeGuard({ modelUrl: url, modelDir: HUB })).toThrow(/received both modelDir and modelUrl/);
  });
});
