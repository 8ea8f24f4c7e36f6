/**
 * onnxruntime-genai's layout (test/fixtures/tiny-proxy-genai, built by lab/model/make_genai_fixture.py):
 * genai_config.json, model.onnx and model.onnx.data at the root, no config.json. It loads from modelDir and
 * by URL through the same code paths as the onnx-community layout, its dims come from genai_config.json, its
 * variant from its graph, and it scores as tiny-proxy-gqa's q4 graph, whose bytes it holds.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../src/core/errors.js';
import { directoryReader, urlReader } from '../../src/engine/files-node.js';
import { configFromGenai } from '../../src/engine/model-config.js';
import { filesForVariant, loadModelFiles, type ModelManifest } from '../../src/engine/model-files.js';
import { createNodeGuard } from '../../src/node.js';
import { copyModelFiles } from '../../src/vite.js';
import { findCase } from '../../src/scenarios/index.js';

const GENAI = fileURLToPath(new URL('../fixtures/tiny-proxy-genai/', import.meta.url));
const GQA = fileURLToPath(new URL('../fixtures/tiny-proxy-gqa/', import.meta.url));
const MODEL_TIMEOUT_MS = 120_000;
/** The same graph and weights on the same kernels: only float rounding may differ. */
const SAME_GRAPH_TOL = 1e-5;
const manifest = JSON.parse(readFileSync(join(GENAI, 'manifest.json'), 'utf8')) as ModelManifest;
const genaiConfig = JSON.parse(readFileSync(join(GENAI, 'genai_config.json'), 'utf8')) as Record<string, unknown>;

describe("onnxruntime-genai's layout", () => {
  it('reads the graph genai_config.json names, its model.onnx.data by path, the dims from genai_config.json and the variant from the graph', async () => {
    // Asked for fp32 (or the default q4), a genai directory gives the one build it holds.
    const files = await loadModelFiles(directoryReader(GENAI), 'fp32');
    expect(files.onnxPath).toBe('model.onnx');
    expect(files.variant).toBe('q4');
    expect(files.externalData).toEqual([{ path: 'model.onnx.data', local: expect.objectContaining({ file: join(GENAI, 'model.onnx.data'), sha256: manifest.files['model.onnx.data']!.sha256 }) }]);
    const gqaConfig = JSON.parse(readFileSync(join(GQA, 'config.json'), 'utf8')) as Record<string, unknown>;
    const keys = ['num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'hidden_size', 'vocab_size', 'max_position_embeddings', 'bos_token_id', 'eos_token_id', 'pad_token_id'];
    expect(files.config).toEqual({ model_type: 'llama', ...Object.fromEntries(keys.map((k) => [k, gqaConfig[k]])) });
    expect(filesForVariant(manifest, 'q4')).toEqual(['manifest.json', 'genai_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.onnx', 'model.onnx.data']);
  });

  it('is copied into an app build whole, whatever variant the app names', async () => {
    const target = mkdtempSync(join(tmpdir(), 'edgearmor-genai-build-'));
    try {
      expect(await copyModelFiles(GENAI, target, 'fp16')).toEqual(filesForVariant(manifest, 'fp16'));
      expect((await loadModelFiles(directoryReader(target), 'fp16')).variant).toBe('q4');
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  });

  it('names the genai_config.json field that is missing or wrong', () => {
    const model = genaiConfig['model'] as Record<string, unknown>;
    const decoder = model['decoder'] as Record<string, unknown>;
    const without = { ...genaiConfig, model: { ...model, decoder: { ...decoder, head_size: undefined } } };
    expect(() => configFromGenai(without)).toThrow(ModelLoadError);
    expect(() => configFromGenai(without)).toThrow('genai_config.json: "model.decoder.head_size" must be a positive integer, received undefined');
    expect(() => configFromGenai({ ...genaiConfig, model: { ...model, context_length: 0 } })).toThrow('"model.context_length" must be a positive integer, received 0');
  });

  it(
    'guards from modelDir with the same scores as tiny-proxy-gqa q4',
    async () => {
      const c = findCase('banking', 'poisoning', 1)!;
      const input = { messages: c.messages, action: c.action, tools: c.tools };
      const genai = createNodeGuard({ modelDir: GENAI, backends: ['node'] });
      const gqa = createNodeGuard({ modelDir: GQA, modelVariant: 'q4', backends: ['node'] });
      try {
        expect(await genai.ready).toMatchObject({ state: 'ready', model: 'tiny-proxy-genai', variant: 'q4', backend: 'node' });
        const [a, b] = [await genai.check(input), await gqa.check(input)];
        expect(a.reason).toBe('model');
        const want = new Map(b.attribution!.variants.map((v) => [v.id, v.logProb]));
        expect(a.attribution!.variants.length).toBe(want.size);
        for (const v of a.attribution!.variants) expect(Math.abs(v.logProb - want.get(v.id)!), v.id).toBeLessThan(SAME_GRAPH_TOL * Math.max(1, Math.abs(v.logProb)));
        expect(a.decision).toBe(b.decision);
      } finally {
        await genai.dispose();
        await gqa.dispose();
      }
    },
    MODEL_TIMEOUT_MS,
  );

  describe('by URL', () => {
    let server: Server;
    let url: string;
    const cacheDir = mkdtempSync(join(tmpdir(), 'edgearmor-cache-'));

    beforeAll(async () => {
      server = createServer((req, res) => {
        const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
        if (path !== 'manifest.json' && !manifest.files[path]) return void res.writeHead(404).end();
        const bytes = readFileSync(join(GENAI, path));
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
      'loads when its manifest lists the genai files, with model.onnx.data cached under the name the graph gives',
      async () => {
        const files = await loadModelFiles(urlReader(url, { cacheDir }), 'q4');
        expect(files.onnxPath).toBe('model.onnx');
        const data = files.externalData[0] as { path: string; local: { file: string } };
        expect(data.path).toBe('model.onnx.data');
        expect(data.local.file.startsWith(join(cacheDir, 'external'))).toBe(true);
        expect(data.local.file.endsWith('/model.onnx.data')).toBe(true);
        const guard = createNodeGuard({ modelUrl: url, cacheDir, backends: ['node'] });
        try {
          expect(await guard.ready).toMatchObject({ state: 'ready', model: 'tiny-proxy-genai', variant: 'q4' });
        } finally {
          await guard.dispose();
        }
      },
      MODEL_TIMEOUT_MS,
    );
  });
});
